"""``--fields-file``: the owner fields of a Human verdict read from a file, for ``request
submit`` and for the terminal reviewer's editor alike."""

from __future__ import annotations

import os
import stat

from artifactize.entrypoints.errors import CommandError

FIELDS_FILE_NOT_REGULAR = "The Human fields file must be a regular file: {path}"
FIELDS_FILE_UNREADABLE = "Cannot read the Human fields file {path}: {reason}"


def read_fields_file(path: str) -> bytes:
    """At most HUMAN_FIELDS_READ_BYTES of a regular file. The open is non-blocking, so a FIFO
    is refused instead of waiting for a writer; what it is, is checked on the open file."""
    from artifactize.domain.reviews.human.submission import HUMAN_FIELDS_READ_BYTES

    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        descriptor = os.open(path, flags)
    except OSError as exc:
        raise CommandError(FIELDS_FILE_UNREADABLE.format(path=path, reason=exc.strerror)) from None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise CommandError(FIELDS_FILE_NOT_REGULAR.format(path=path))
        chunks: list[bytes] = []
        remaining = HUMAN_FIELDS_READ_BYTES
        while remaining > 0:
            chunk = os.read(descriptor, remaining)
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise CommandError(FIELDS_FILE_UNREADABLE.format(path=path, reason=exc.strerror)) from None
    finally:
        os.close(descriptor)
