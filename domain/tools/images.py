"""Image checks shared by the ``view_image`` built-in and json-protocol image blocks.

An image is accepted by its bytes, never by a file name: it must be a nonempty PNG, JPEG or
WebP of at most 4 MiB (file bytes, not decoded pixels). Detection looks at signatures and
container framing only, which is enough to refuse GIF, BMP, JPEG-LS and animated PNG
without decoding pixels. Every accepted image leaves as canonical padded base64, so a
result is self-contained and byte-identical whatever padding the tool chose.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

IMAGE_MAX_BYTES = 4 * 1024 * 1024
# The padded base64 length of the largest accepted image; longer text is refused before it
# is decoded, so an oversized payload never costs its decoded copy.
IMAGE_BASE64_MAX_CHARS = -(-IMAGE_MAX_BYTES // 3) * 4

PNG_MIME = "image/png"
JPEG_MIME = "image/jpeg"
WEBP_MIME = "image/webp"
IMAGE_MIME_TYPES = (PNG_MIME, JPEG_MIME, WEBP_MIME)

SIZE_REFUSED = "Image exceeds the 4 MiB limit or contains no data."
BASE64_REFUSED = "Image requires valid base64 data."
FORMAT_REFUSED = "Image must be PNG, JPEG or WebP; GIF, BMP and animated PNG are not supported."
MIME_MISMATCH = "Image bytes do not match declared MIME type."

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_JPEG_PREFIX = b"\xff\xd8\xff"
_JPEG_LS_MARKER = 0xF7  # SOF55: JPEG-LS shares the JPEG prefix but few viewers decode it
_PNG_CHUNK_OVERHEAD = 12  # length (4) + type (4) + CRC (4)
_PNG_IHDR_LENGTH = 13

# Standard alphabet, then at most two '=': padding is optional but never misplaced.
_BASE64_SHAPE = re.compile(r"([A-Za-z0-9+/]*)(=*)")


class ImageError(ValueError):
    """An image refused by the shared checks; the message is what the reviewer reads."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class ImageBlock:
    """An accepted image: its detected MIME type and canonical padded standard base64."""

    mime_type: str
    data_base64: str

    def to_json(self) -> dict[str, str]:
        """The normalized content block, in the reference's key order."""
        return {"type": "image", "data": self.data_base64, "mimeType": self.mime_type}


def detect_image_mime(data: bytes) -> str:
    """The MIME type the bytes' signature and framing identify, or ``ImageError``."""
    if data.startswith(_JPEG_PREFIX) and len(data) > 3 and data[3] != _JPEG_LS_MARKER:
        return JPEG_MIME
    if data.startswith(PNG_SIGNATURE) and _is_still_png(data):
        return PNG_MIME
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return WEBP_MIME
    raise ImageError(FORMAT_REFUSED)


def check_image_bytes(data: bytes, declared_mime: str | None) -> ImageBlock:
    """Apply the size, format and (when declared) exact MIME checks to file bytes.

    ``declared_mime`` is ``None`` for ``view_image``, which has nothing to compare with;
    json blocks always declare one and it must equal the detected type byte for byte.
    """
    if not 0 < len(data) <= IMAGE_MAX_BYTES:
        raise ImageError(SIZE_REFUSED)
    mime_type = detect_image_mime(data)
    if declared_mime is not None and declared_mime != mime_type:
        raise ImageError(MIME_MISMATCH)
    return ImageBlock(mime_type, base64.b64encode(data).decode("ascii"))


def decode_base64_image(text: str, declared_mime: str | None) -> ImageBlock:
    """Decode a json block's inline ``data`` and check the bytes like a file's."""
    if len(text) > IMAGE_BASE64_MAX_CHARS:
        raise ImageError(SIZE_REFUSED)
    return check_image_bytes(decode_base64(text), declared_mime)


def decode_base64(text: str) -> bytes:
    """Strict standard base64 with optional padding, or ``ImageError``.

    Refused: empty text, whitespace, a ``data:`` prefix, URL-safe letters, padding that is
    misplaced or longer than the length needs, a dangling single character, and nonzero
    unused bits in the last character (so each accepted text names exactly one byte string).
    """
    shape = _BASE64_SHAPE.fullmatch(text)
    if not text or shape is None:
        raise ImageError(BASE64_REFUSED)
    body, padding = shape.group(1), shape.group(2)
    needed = -len(body) % 4
    if len(body) % 4 == 1 or len(padding) > needed:
        raise ImageError(BASE64_REFUSED)
    try:
        data = base64.b64decode(body + "=" * needed, validate=True)
    except binascii.Error as error:  # pragma: no cover - the shape check already refused it
        raise ImageError(BASE64_REFUSED) from error
    if base64.b64encode(data).decode("ascii").rstrip("=") != body:
        raise ImageError(BASE64_REFUSED)
    return data


def _is_still_png(data: bytes) -> bool:
    """Walk the chunks after the signature: IHDR first, no ``acTL`` chunk, IEND reached.

    Only chunk *types* count: ``acTL`` bytes inside another chunk's data (a tEXt, say) are
    not an animation control chunk. CRCs are not checked, and bytes after IEND are ignored.
    """
    offset = len(PNG_SIGNATURE)
    first = True
    while offset < len(data):
        if offset + _PNG_CHUNK_OVERHEAD > len(data):
            return False
        length = int.from_bytes(data[offset : offset + 4], "big")
        kind = data[offset + 4 : offset + 8]
        if first and (length != _PNG_IHDR_LENGTH or kind != b"IHDR"):
            return False
        end = offset + _PNG_CHUNK_OVERHEAD + length
        if end > len(data) or kind == b"acTL":
            return False
        if kind == b"IEND":
            return True
        offset, first = end, False
    return False
