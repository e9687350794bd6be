"""A stand-in ``bcryptprimitives.dll`` for Wine 8.0, written as a minimal PE32+ image.

Rust-built wheels (rpds-py under jsonschema, pydantic-core, ry) import ``ProcessPrng`` from
``bcryptprimitives.dll``, which Wine only gained in 8.13; Debian 12 ships Wine 8.0, so those
extensions fail to load. This DLL has no code at all: its one export is a *forwarder* to
``advapi32.SystemFunction036`` (``RtlGenRandom``), which fills a buffer with random bytes
exactly as ``ProcessPrng`` does (both take the buffer first and its size second; Rust's
standard library ignores the result in release builds). Writing the image here spares the
lane a cross compiler (mingw-w64) and keeps the trick inside the test lane, never the product.
"""

from __future__ import annotations

import struct

DLL_NAME = "bcryptprimitives.dll"
EXPORT_NAME = "ProcessPrng"
FORWARD_TO = "advapi32.SystemFunction036"

_FILE_ALIGNMENT = 0x200
_SECTION_ALIGNMENT = 0x1000
_SECTION_RVA = 0x1000
_IMAGE_BASE = 0x1_8000_0000
_MACHINE_AMD64 = 0x8664
_CHARACTERISTICS = 0x0002 | 0x0020 | 0x2000  # executable image, large-address aware, DLL
_PE32_PLUS = 0x20B
_SUBSYSTEM_CONSOLE = 3
_DLL_CHARACTERISTICS = 0x0020 | 0x0040 | 0x0100  # high-entropy VA, dynamic base, NX
_SECTION_FLAGS = 0x0000_0040 | 0x4000_0000  # initialised data, readable
_DATA_DIRECTORIES = 16
_EXPORT_DIRECTORY_SIZE = 40


def _export_section() -> bytes:
    """The export directory, its three tables and its strings, laid out from ``_SECTION_RVA``."""
    functions = _SECTION_RVA + _EXPORT_DIRECTORY_SIZE
    names = functions + 4
    ordinals = names + 4
    strings = ordinals + 2
    dll_name = DLL_NAME.encode() + b"\0"
    export_name = EXPORT_NAME.encode() + b"\0"
    forward = FORWARD_TO.encode() + b"\0"
    dll_name_rva = strings
    export_name_rva = dll_name_rva + len(dll_name)
    forward_rva = export_name_rva + len(export_name)
    directory = struct.pack(
        "<IIHHIIIIIII",
        0,  # characteristics
        0,  # time stamp
        0,  # major version
        0,  # minor version
        dll_name_rva,
        1,  # ordinal base
        1,  # number of functions
        1,  # number of names
        functions,
        names,
        ordinals,
    )
    # A function RVA inside the export directory's range is a forwarder string.
    tables = struct.pack("<IIH", forward_rva, export_name_rva, 0)
    return directory + tables + dll_name + export_name + forward


def build() -> bytes:
    """The whole DLL image."""
    section = _export_section()
    raw_size = -(-len(section) // _FILE_ALIGNMENT) * _FILE_ALIGNMENT
    dos = b"MZ" + bytes(0x3A) + struct.pack("<I", 0x40)
    coff = struct.pack("<HHIIIHH", _MACHINE_AMD64, 1, 0, 0, 0, 240, _CHARACTERISTICS)
    optional = struct.pack(
        "<HBBIIIIIQIIHHHHHHIIIIHHQQQQII",
        _PE32_PLUS,
        0,
        0,  # linker version
        0,  # size of code
        raw_size,  # size of initialised data
        0,  # size of uninitialised data
        0,  # entry point: none (a DLL may have no DllMain)
        _SECTION_RVA,  # base of code
        _IMAGE_BASE,
        _SECTION_ALIGNMENT,
        _FILE_ALIGNMENT,
        6,
        0,  # operating system version
        0,
        0,  # image version
        6,
        0,  # subsystem version
        0,  # win32 version value
        _SECTION_RVA + _SECTION_ALIGNMENT,  # size of image
        _FILE_ALIGNMENT,  # size of headers
        0,  # checksum
        _SUBSYSTEM_CONSOLE,
        _DLL_CHARACTERISTICS,
        0x100000,  # stack reserve
        0x1000,  # stack commit
        0x100000,  # heap reserve
        0x1000,  # heap commit
        0,  # loader flags
        _DATA_DIRECTORIES,
    )
    directories = struct.pack("<II", _SECTION_RVA, len(section)) + bytes(
        8 * (_DATA_DIRECTORIES - 1)
    )
    section_header = struct.pack(
        "<8sIIIIIIHHI",
        b".edata",
        len(section),
        _SECTION_RVA,
        raw_size,
        _FILE_ALIGNMENT,  # pointer to raw data
        0,
        0,
        0,
        0,
        _SECTION_FLAGS,
    )
    headers = dos + b"PE\0\0" + coff + optional + directories + section_header
    assert len(headers) <= _FILE_ALIGNMENT
    return headers.ljust(_FILE_ALIGNMENT, b"\0") + section.ljust(raw_size, b"\0")


if __name__ == "__main__":
    import sys

    with open(sys.argv[1], "wb") as out:
        out.write(build())
