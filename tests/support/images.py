"""The image fixtures of ``tools-cases.md`` ("Image fixtures"), as bytes."""

from __future__ import annotations

import base64
import struct
import zlib


def png_chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
IHDR = png_chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
TEXT = png_chunk(b"tEXt", b"note\0acTL")
IDAT = png_chunk(b"IDAT", zlib.compress(b"\x00\x80"))
IEND = png_chunk(b"IEND", b"")
ACTL = png_chunk(b"acTL", bytes([0, 0, 0, 1, 0, 0, 0, 0]))

PNG1 = PNG_SIGNATURE + IHDR + TEXT + IDAT + IEND
APNG1 = PNG1[:33] + ACTL + PNG1[33:]
JPEG1_B64 = (
    "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAMCAgICAgMCAgIDAwMDBAYEBAQEBAgGBgUGCQgKCgkICQkKDA8MCgsOCwkJ"
    "DRENDg8QEBEQCgwSExIQEw8QEBD/wAALCAABAAEBAREA/8QAFAABAAAAAAAAAAAAAAAAAAAACf/EABQQAQAAAAAAAAAA"
    "AAAAAAAAAAD/2gAIAQEAAD8AVN//2Q=="
)
JPEG1 = base64.b64decode(JPEG1_B64)
WEBP1_B64 = "UklGRiQAAABXRUJQVlA4IBgAAAAwAQCdASoBAAEAAgA0JaQAA3AA/vuUAAA="
WEBP1 = base64.b64decode(WEBP1_B64)
GIF1 = b"GIF89a\x01\x00\x01\x00"
BMP1 = b"BM\0\0\0\0"
JPEGLS = b"\xff\xd8\xff\xf7"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
