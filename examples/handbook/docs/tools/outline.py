"""A json-protocol Agent tool that returns an image: the outline of one page as a bar chart.

Reads one request on stdin, draws one bar per section of a Markdown page (as tall as the
section has lines) into a PNG in the request's output directory, and prints a result with a
text block and an image block that names the file by `path`. artifactize reads the file and
embeds it before the output directory is removed. Standard library only: the PNG is built
with zlib and struct.
"""

import json
import os
import re
import struct
import sys
import zlib

BAR, GAP, HEIGHT, MARGIN = 12, 4, 64, 4
PAGE = re.compile(r"[A-Za-z0-9_-]+\.md")


def fail(message):
    """An authored error: exit 0 with exactly one nonblank text block."""
    json.dump({"isError": True, "content": [{"type": "text", "text": message}]}, sys.stdout)
    sys.exit(0)


def sections(text):
    """(heading, number of lines) for each heading of the page, in order."""
    found = []
    for line in text.splitlines():
        if line.startswith("#"):
            found.append([line.lstrip("#").strip(), 0])
        elif found:
            found[-1][1] += 1
    return [(heading, count) for heading, count in found]


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(counts):
    """A grayscale PNG: white background, one dark bar per count."""
    width = MARGIN * 2 + len(counts) * (BAR + GAP) - GAP
    tallest = max(counts) or 1
    heights = [max(1, round(c * (HEIGHT - 2 * MARGIN) / tallest)) for c in counts]
    rows = []
    for y in range(HEIGHT):
        row = bytearray(b"\xff" * width)
        for i, h in enumerate(heights):
            if HEIGHT - MARGIN - h <= y < HEIGHT - MARGIN:
                start = MARGIN + i * (BAR + GAP)
                row[start : start + BAR] = b"\x30" * BAR
        rows.append(b"\x00" + bytes(row))  # filter type 0 (None) per scanline
    header = struct.pack(">IIBBBBB", width, HEIGHT, 8, 0, 0, 0, 0)  # 8-bit grayscale
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"".join(rows)))
        + chunk(b"IEND", b"")
    )


request = json.load(sys.stdin)
page = request["args"].get("page", "guide.md")
if not PAGE.fullmatch(page) or not os.path.isfile(page):  # the cwd is the docs folder
    fail(f"No page named {page!r} here; name a Markdown file of this folder, like guide.md.")
with open(page, encoding="utf-8") as source:
    found = sections(source.read())
if not found:
    fail(f"{page} has no headings to draw.")
with open(os.path.join(request["context"]["outputDir"], "outline.png"), "wb") as out:
    out.write(png([count for _, count in found]))
summary = "\n".join(f"{heading}: {count} line{'s' * (count != 1)}" for heading, count in found)
json.dump(
    {
        "content": [
            {"type": "text", "text": f"{page}, one bar per section, left to right:\n{summary}"},
            {"type": "image", "mimeType": "image/png", "path": "outline.png"},
        ]
    },
    sys.stdout,
)
