"""Typed ctypes bindings to the few kernel32/ntdll/advapi32 calls the Windows adapters use.

No pywin32: each call is declared once with its argument and result types and wrapped in a
typed Python function that raises ``OSError`` (with the Windows error code) on failure. The
libraries are loaded on first use, so this module imports on any OS (mypy checks it on
Linux; the Windows lane runs it under Wine). On x64 Windows there is one calling
convention, so ``ctypes.CDLL`` loads these system libraries exactly as ``WinDLL`` would.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from ctypes import wintypes
from typing import Any

__all__ = [
    "ERROR_ACCESS_DENIED",
    "INVALID_HANDLE_VALUE",
    "Handle",
    "advapi32",
    "check_bool",
    "check_handle",
    "check_status",
    "close_handle",
    "kernel32",
    "last_error",
    "ntdll",
    "system_directory",
    "windows_error",
]

Handle = int
INVALID_HANDLE_VALUE = ctypes.c_void_p(-1).value
ERROR_ACCESS_DENIED = 5
ERROR_FILE_NOT_FOUND = 2
ERROR_INVALID_PARAMETER = 87

if sys.platform == "win32":
    from ctypes import get_last_error as _get_last_error
else:

    def _get_last_error() -> int:
        raise OSError("Windows error codes exist only on Windows")


def last_error() -> int:
    """The calling thread's last Windows error, as saved by ctypes right after the call."""
    return _get_last_error()


def windows_error(code: int, what: str) -> OSError:
    """An ``OSError`` carrying the Windows error code (``winerror`` on Windows)."""
    error = OSError(None, f"{what} failed (Windows error {code})")
    error.winerror = code  # type: ignore[attr-defined]  # only typed on Windows
    return error


def check_bool(result: int, what: str) -> None:
    """Raise for a Win32 BOOL result of 0."""
    if not result:
        raise windows_error(last_error(), what)


def check_handle(result: int | None, what: str) -> Handle:
    """A handle result; NULL and INVALID_HANDLE_VALUE are failures."""
    if not result or result == INVALID_HANDLE_VALUE:
        raise windows_error(last_error(), what)
    return result


class FileAttributeTagInfo(ctypes.Structure):
    """FILE_ATTRIBUTE_TAG_INFO: the attributes and reparse tag of an open handle."""

    _fields_ = (("FileAttributes", wintypes.DWORD), ("ReparseTag", wintypes.DWORD))


class FileStandardInfo(ctypes.Structure):
    """FILE_STANDARD_INFO: sizes, link count and kind of an open handle."""

    _fields_ = (
        ("AllocationSize", ctypes.c_int64),
        ("EndOfFile", ctypes.c_int64),
        ("NumberOfLinks", wintypes.DWORD),
        ("DeletePending", wintypes.BOOLEAN),
        ("Directory", wintypes.BOOLEAN),
    )


def _declare(library: ctypes.CDLL, name: str, restype: Any, *argtypes: Any) -> Any:
    function = getattr(library, name)
    function.restype = restype
    function.argtypes = list(argtypes)
    return function


class _Kernel32:
    """kernel32 functions, declared once."""

    def __init__(self) -> None:
        dll = ctypes.CDLL("kernel32", use_last_error=True)
        handle, dword, boolean = wintypes.HANDLE, wintypes.DWORD, wintypes.BOOL
        self.CloseHandle = _declare(dll, "CloseHandle", boolean, handle)
        self.CreateJobObjectW = _declare(
            dll, "CreateJobObjectW", handle, ctypes.c_void_p, wintypes.LPCWSTR
        )
        self.SetInformationJobObject = _declare(
            dll, "SetInformationJobObject", boolean, handle, ctypes.c_int, ctypes.c_void_p, dword
        )
        self.QueryInformationJobObject = _declare(
            dll,
            "QueryInformationJobObject",
            boolean,
            handle,
            ctypes.c_int,
            ctypes.c_void_p,
            dword,
            ctypes.POINTER(dword),
        )
        self.OpenJobObjectW = _declare(
            dll, "OpenJobObjectW", handle, dword, boolean, wintypes.LPCWSTR
        )
        self.AssignProcessToJobObject = _declare(
            dll, "AssignProcessToJobObject", boolean, handle, handle
        )
        self.TerminateJobObject = _declare(
            dll, "TerminateJobObject", boolean, handle, wintypes.UINT
        )
        self.OpenProcess = _declare(dll, "OpenProcess", handle, dword, boolean, dword)
        self.TerminateProcess = _declare(dll, "TerminateProcess", boolean, handle, wintypes.UINT)
        self.GetExitCodeProcess = _declare(
            dll, "GetExitCodeProcess", boolean, handle, ctypes.POINTER(dword)
        )
        self.WaitForSingleObject = _declare(dll, "WaitForSingleObject", dword, handle, dword)
        self.OpenEventW = _declare(dll, "OpenEventW", handle, dword, boolean, wintypes.LPCWSTR)
        self.SetEvent = _declare(dll, "SetEvent", boolean, handle)
        self.GetSystemDirectoryW = _declare(
            dll, "GetSystemDirectoryW", wintypes.UINT, wintypes.LPWSTR, wintypes.UINT
        )
        self.GetFileInformationByHandleEx = _declare(
            dll,
            "GetFileInformationByHandleEx",
            boolean,
            handle,
            ctypes.c_int,
            ctypes.c_void_p,
            dword,
        )
        self.ReadFile = _declare(
            dll,
            "ReadFile",
            boolean,
            handle,
            ctypes.c_void_p,
            dword,
            ctypes.POINTER(dword),
            ctypes.c_void_p,
        )
        self.GetFileType = _declare(dll, "GetFileType", dword, handle)
        self.CreateFileW = _declare(
            dll,
            "CreateFileW",
            handle,
            wintypes.LPCWSTR,
            dword,
            dword,
            ctypes.c_void_p,  # SECURITY_ATTRIBUTES*
            dword,
            dword,
            handle,
        )
        self.WriteFile = _declare(
            dll,
            "WriteFile",
            boolean,
            handle,
            ctypes.c_void_p,
            dword,
            ctypes.POINTER(dword),
            ctypes.c_void_p,
        )
        self.FlushFileBuffers = _declare(dll, "FlushFileBuffers", boolean, handle)
        self.LockFileEx = _declare(
            dll, "LockFileEx", boolean, handle, dword, dword, dword, dword, ctypes.c_void_p
        )
        self.GetCurrentProcess = _declare(dll, "GetCurrentProcess", handle)
        self.LocalFree = _declare(dll, "LocalFree", ctypes.c_void_p, ctypes.c_void_p)


class _Ntdll:
    """ntdll functions (NTSTATUS results: negative is failure)."""

    def __init__(self) -> None:
        dll = ctypes.CDLL("ntdll")
        status = ctypes.c_long
        self.NtResumeProcess = _declare(dll, "NtResumeProcess", status, wintypes.HANDLE)
        self.NtCreateFile = _declare(
            dll,
            "NtCreateFile",
            status,
            ctypes.POINTER(wintypes.HANDLE),
            wintypes.DWORD,
            ctypes.c_void_p,  # OBJECT_ATTRIBUTES*
            ctypes.c_void_p,  # IO_STATUS_BLOCK*
            ctypes.c_void_p,  # LARGE_INTEGER* allocation size
            wintypes.ULONG,
            wintypes.ULONG,
            wintypes.ULONG,
            wintypes.ULONG,
            ctypes.c_void_p,
            wintypes.ULONG,
        )
        self.NtQueryDirectoryFile = _declare(
            dll,
            "NtQueryDirectoryFile",
            status,
            wintypes.HANDLE,
            wintypes.HANDLE,
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_void_p,  # IO_STATUS_BLOCK*
            ctypes.c_void_p,
            wintypes.ULONG,
            ctypes.c_int,
            wintypes.BOOLEAN,
            ctypes.c_void_p,  # UNICODE_STRING* file name
            wintypes.BOOLEAN,
        )
        self.RtlNtStatusToDosError = _declare(
            dll, "RtlNtStatusToDosError", wintypes.ULONG, ctypes.c_long
        )


class _Advapi32:
    """advapi32 functions for owner-only security descriptors."""

    def __init__(self) -> None:
        dll = ctypes.CDLL("advapi32", use_last_error=True)
        boolean = wintypes.BOOL
        self.ConvertStringSecurityDescriptorToSecurityDescriptorW = _declare(
            dll,
            "ConvertStringSecurityDescriptorToSecurityDescriptorW",
            boolean,
            wintypes.LPCWSTR,
            wintypes.DWORD,
            ctypes.POINTER(ctypes.c_void_p),
            ctypes.POINTER(wintypes.ULONG),
        )
        self.SetFileSecurityW = _declare(
            dll, "SetFileSecurityW", boolean, wintypes.LPCWSTR, wintypes.DWORD, ctypes.c_void_p
        )
        self.GetFileSecurityW = _declare(
            dll,
            "GetFileSecurityW",
            boolean,
            wintypes.LPCWSTR,
            wintypes.DWORD,
            ctypes.c_void_p,
            wintypes.DWORD,
            ctypes.POINTER(wintypes.DWORD),
        )
        self.OpenProcessToken = _declare(
            dll,
            "OpenProcessToken",
            boolean,
            wintypes.HANDLE,
            wintypes.DWORD,
            ctypes.POINTER(wintypes.HANDLE),
        )
        self.GetTokenInformation = _declare(
            dll,
            "GetTokenInformation",
            boolean,
            wintypes.HANDLE,
            ctypes.c_int,
            ctypes.c_void_p,
            wintypes.DWORD,
            ctypes.POINTER(wintypes.DWORD),
        )
        self.ConvertSidToStringSidW = _declare(
            dll,
            "ConvertSidToStringSidW",
            boolean,
            ctypes.c_void_p,
            ctypes.POINTER(wintypes.LPWSTR),
        )
        self.ConvertSecurityDescriptorToStringSecurityDescriptorW = _declare(
            dll,
            "ConvertSecurityDescriptorToStringSecurityDescriptorW",
            boolean,
            ctypes.c_void_p,
            wintypes.DWORD,
            wintypes.DWORD,
            ctypes.POINTER(wintypes.LPWSTR),
            ctypes.POINTER(wintypes.ULONG),
        )


@functools.cache
def kernel32() -> _Kernel32:
    return _Kernel32()


@functools.cache
def ntdll() -> _Ntdll:
    return _Ntdll()


@functools.cache
def advapi32() -> _Advapi32:
    return _Advapi32()


def check_status(status: int, what: str) -> None:
    """Raise for a failed NTSTATUS, with the Windows error code it maps to."""
    if status < 0:
        code = int(ntdll().RtlNtStatusToDosError(status))
        raise windows_error(code, f"{what} (NTSTATUS {status & 0xFFFFFFFF:#010x})")


def close_handle(handle: Handle) -> None:
    kernel32().CloseHandle(handle)


def system_directory() -> str:
    """``C:\\Windows\\System32`` as this system names it (not taken from the environment)."""
    buffer = ctypes.create_unicode_buffer(wintypes.MAX_PATH + 1)
    length = int(kernel32().GetSystemDirectoryW(buffer, len(buffer)))
    if not 0 < length < len(buffer):
        raise windows_error(last_error(), "GetSystemDirectoryW")
    return buffer.value
