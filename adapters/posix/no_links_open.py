"""A directory opened by path in one system call, with no link anywhere on the way: Linux's
``openat2`` with ``RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`` (5.6 and newer).

``open_root`` proves that a canonical path leads to its folder with no link on the way by
walking from ``/`` one no-follow ``openat`` at a time. ``openat2`` makes the kernel prove the
same in one call: a symbolic link in any component (and a ``/proc`` "magic" link such as
``/proc/PID/root``) fails it with ``ELOOP``. A check made after an ordinary ``open`` cannot
tell as much: the name ``/proc/self/fd`` gives back is the folder's path *in its own mount
namespace*, so a link through ``/proc/PID/root`` into another namespace where the same path
exists reads back as exactly the path asked for.

Python has no ``openat2``; it is called through ``ctypes``, whose import costs about 2 ms,
as much as some fifty walks. So a process walks its first ``WALKS_FIRST`` roots (a command
such as ``config check`` opens a few) and binds ``openat2`` at the next: a ``verify`` that
opens two per runtime eval pays the import once. Where ``openat2`` is missing (another
kernel or architecture, a seccomp filter that refuses it) the answer is always None and the
caller walks.
"""

from __future__ import annotations

import errno
import os
import platform
from typing import Any

__all__ = ["WALKS_FIRST", "open_directory_without_links"]

WALKS_FIRST = 16  # roots walked before openat2 is bound (see the module docstring)

# openat2's number: one table for the architectures that share the generic numbering.
_SYSCALL_NUMBERS = {
    "x86_64": 437,
    "aarch64": 437,
    "arm64": 437,
    "i386": 437,
    "i686": 437,
    "armv7l": 437,
    "armv8l": 437,
    "riscv64": 437,
    "ppc64le": 437,
    "ppc64": 437,
    "s390x": 437,
    "loongarch64": 437,
}
_AT_FDCWD = -100
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_UNAVAILABLE = frozenset({errno.ENOSYS, errno.EPERM, errno.E2BIG, errno.EINVAL})


class _OpenAt2:
    """The ``openat2`` call, bound once; ``usable`` turns False for good when the kernel
    (or a filter in front of it) refuses the call itself."""

    def __init__(self) -> None:
        self.usable = False
        number = _SYSCALL_NUMBERS.get(platform.machine())
        if number is None or not hasattr(os, "O_DIRECTORY"):
            return
        import ctypes  # only here: about 2 ms (see the module docstring)

        class OpenHow(ctypes.Structure):
            _fields_ = [
                ("flags", ctypes.c_uint64),
                ("mode", ctypes.c_uint64),
                ("resolve", ctypes.c_uint64),
            ]

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            self._syscall: Any = libc.syscall
        except (OSError, AttributeError):
            return
        self._syscall.restype = ctypes.c_long
        self._number = ctypes.c_long(number)
        self._at = ctypes.c_long(_AT_FDCWD)  # syscall(2) reads every argument as a long
        self._how_type = OpenHow
        self._size = ctypes.c_size_t(ctypes.sizeof(OpenHow))
        self._byref = ctypes.byref
        self._errno = ctypes.get_errno
        self.usable = True

    def open(self, path: str, flags: int) -> int | None:
        how = self._how_type(flags, 0, _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
        fd = int(
            self._syscall(self._number, self._at, os.fsencode(path), self._byref(how), self._size)
        )
        if fd >= 0:
            return fd
        if self._errno() in _UNAVAILABLE:
            self.usable = False  # the call itself is refused: walk from now on
        return None


_opener: _OpenAt2 | None = None
_walked = 0  # roots left to the walk so far, up to WALKS_FIRST


def open_directory_without_links(path: str, flags: int) -> int | None:
    """A descriptor of the directory at the absolute ``path`` (``flags`` as ``os.open``'s),
    opened with no link followed anywhere on the way; None when a link is met, the folder
    cannot be opened, or ``openat2`` is not to be had (the caller then walks, with its own
    errors)."""
    global _opener, _walked
    opener = _opener
    if opener is None:
        if _walked < WALKS_FIRST:
            _walked += 1  # not worth the import yet (threads: a race costs one walk more)
            return None
        opener = _opener = _OpenAt2()
    if not opener.usable or "\0" in path:
        return None
    return opener.open(path, flags)
