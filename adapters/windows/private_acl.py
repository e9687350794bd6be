"""Owner-only access on Windows: the ACL equivalent of POSIX 0700 folders and 0600 files.

A private folder or file gets a *protected* DACL (no ACEs inherited from its parent) with a
single entry: full control for the user artifactize runs as, inherited by everything created
inside a folder. Administrators and SYSTEM get no entry, as group and others get no bits on
POSIX (an administrator can still take ownership, as root can read anything).

The user is named by the SID of the process token, not by ``USERNAME``, which any process
can set.
"""

from __future__ import annotations

import ctypes
from ctypes import wintypes

from artifactize.adapters.windows import win32

__all__ = ["owner_only_sddl", "restrict_to_owner", "user_sid"]

_TOKEN_QUERY = 0x0008
_TOKEN_USER = 1
_DACL_SECURITY_INFORMATION = 0x0000_0004
_PROTECTED_DACL_SECURITY_INFORMATION = 0x8000_0000
_SDDL_REVISION_1 = 1
_TOKEN_BUFFER_BYTES = 256


def user_sid() -> str:
    """The string SID (``S-1-5-21-…``) of the user this process runs as."""
    kernel32 = win32.kernel32()
    advapi32 = win32.advapi32()
    token = wintypes.HANDLE()
    win32.check_bool(
        advapi32.OpenProcessToken(kernel32.GetCurrentProcess(), _TOKEN_QUERY, ctypes.byref(token)),
        "OpenProcessToken",
    )
    try:
        buffer = ctypes.create_string_buffer(_TOKEN_BUFFER_BYTES)
        needed = wintypes.DWORD()
        win32.check_bool(
            advapi32.GetTokenInformation(
                token, _TOKEN_USER, buffer, len(buffer), ctypes.byref(needed)
            ),
            "GetTokenInformation",
        )
    finally:
        assert token.value is not None
        win32.close_handle(token.value)
    # TOKEN_USER starts with SID_AND_ATTRIBUTES, whose first field is the SID pointer.
    sid_pointer = ctypes.c_void_p.from_buffer(buffer).value
    text = wintypes.LPWSTR()
    win32.check_bool(
        advapi32.ConvertSidToStringSidW(sid_pointer, ctypes.byref(text)), "ConvertSidToStringSidW"
    )
    try:
        assert text.value is not None
        return text.value
    finally:
        kernel32.LocalFree(text)


def owner_only_sddl(sid: str, *, folder: bool) -> str:
    """A protected DACL granting ``sid`` full control (inherited inside a folder)."""
    inheritance = "OICI" if folder else ""
    return f"D:P(A;{inheritance};FA;;;{sid})"


def restrict_to_owner(path: str, *, folder: bool) -> None:
    """Replace the DACL of ``path`` with the owner-only one; raises ``OSError``."""
    advapi32 = win32.advapi32()
    descriptor = ctypes.c_void_p()
    win32.check_bool(
        advapi32.ConvertStringSecurityDescriptorToSecurityDescriptorW(
            owner_only_sddl(user_sid(), folder=folder),
            _SDDL_REVISION_1,
            ctypes.byref(descriptor),
            None,
        ),
        "ConvertStringSecurityDescriptorToSecurityDescriptorW",
    )
    try:
        win32.check_bool(
            advapi32.SetFileSecurityW(
                path,
                _DACL_SECURITY_INFORMATION | _PROTECTED_DACL_SECURITY_INFORMATION,
                descriptor,
            ),
            "SetFileSecurityW",
        )
    finally:
        win32.kernel32().LocalFree(descriptor)
