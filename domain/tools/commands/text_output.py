"""Turning program output into a text block a reviewer can read.

Plain command output, Human tool output and ``help`` output are decoded lossily (invalid
UTF-8 becomes U+FFFD rather than an error), cleaned of terminal control sequences so colour
codes and cursor movement never reach a model, and capped at 64 KiB with a visible marker.
"""

from __future__ import annotations

import re

TEXT_BLOCK_MAX_BYTES = 64 * 1024
TRUNCATION_MARKER = "\n[output truncated]"

# ECMA-48 CSI: ESC '[' then parameter bytes 0x30-0x3F, intermediate bytes 0x20-0x2F and
# exactly one final byte 0x40-0x7E. Anything else starting with ESC is not a CSI sequence.
_CSI = re.compile(r"\x1b\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]")
# C0 controls other than TAB, LF and CR; DEL (0x7F) and everything non-ASCII are kept.
_C0_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def decode_lossy(data: bytes) -> str:
    """UTF-8 decoding that replaces each invalid sequence with U+FFFD instead of failing."""
    return data.decode("utf-8", errors="replace")


def clean_output(text: str) -> str:
    """Remove CSI sequences, then the remaining C0 controls except TAB, LF and CR.

    Removing CSI first matters: an unterminated CSI such as ``ESC [31`` then loses only its
    ESC (the C0 pass), keeping ``[31``; other escapes such as ``ESC ] title BEL`` lose the
    ESC and the BEL but keep the text between them.
    """
    return _C0_CONTROL.sub("", _CSI.sub("", text))


def truncate_utf8(
    text: str,
    limit: int = TEXT_BLOCK_MAX_BYTES,
    marker: str = TRUNCATION_MARKER,
    *,
    force: bool = False,
) -> str:
    """``text`` unchanged when it fits in ``limit`` UTF-8 bytes, else a prefix plus marker.

    The prefix ends on a character boundary and the whole result, marker included, is at
    most ``limit`` bytes. ``force`` appends the marker even to text that fits, for output
    that was already cut while it was captured.
    """
    encoded = text.encode("utf-8")
    if len(encoded) <= limit and not force:
        return text
    room = limit - len(marker.encode("utf-8"))
    if room < 0:
        raise ValueError("the truncation marker does not fit in the limit")
    return utf8_prefix(encoded, room) + marker


def utf8_prefix(encoded: bytes, limit: int) -> str:
    """The longest prefix of valid UTF-8 ``encoded`` that fits ``limit`` bytes.

    A multibyte character cut by the limit is dropped whole, never replaced by U+FFFD.
    """
    return encoded[:limit].decode("utf-8", errors="ignore")
