"""A throwaway PostgreSQL server for the tests: ``initdb`` into a temporary directory, ``pg_ctl``
on a free 127.0.0.1 port, stopped and removed afterwards.

The binaries come with the machine image (``make test`` installs the ``postgresql`` package
where they are missing, see ``.ci/ensure-postgresql``); they are looked up on ``PATH`` and in
``/usr/lib/postgresql/*/bin``. Where there are none, the tests that need the server are
skipped with a reason saying so. PostgreSQL refuses to run as root, so as root the server
runs as the ``postgres`` user (``setpriv``) and its directory belongs to that user.

Fixtures: ``postgresql_server`` (one server per test process, started on first use) and
``postgresql_url`` (a fresh database on it per test, dropped afterwards)::

    from tests.support import postgres
    postgresql_server = postgres.postgresql_server
    postgresql_url = postgres.postgresql_url
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

START_SECONDS = 60
SUPERUSER = "postgres"
NO_BINARIES = (
    "PostgreSQL binaries (initdb, pg_ctl) were not found on PATH or in "
    "/usr/lib/postgresql/*/bin; install the postgresql package (make test does)."
)
_databases = itertools.count(1)


def find_binaries() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``, or None."""
    on_path = shutil.which("initdb")
    candidates = [str(Path(on_path).resolve().parent)] if on_path else []
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for directory in candidates:
        if (Path(directory) / "initdb").is_file() and (Path(directory) / "pg_ctl").is_file():
            return Path(directory)
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PostgresServer:
    """A running server; ``url(name)`` is the SQLAlchemy URL of one of its databases."""

    binaries: Path
    directory: Path
    port: int

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def admin(self, statement: str) -> None:
        import psycopg

        with psycopg.connect(
            host="127.0.0.1", port=self.port, user=SUPERUSER, dbname="postgres", autocommit=True
        ) as connection:
            connection.execute(statement)

    def create_database(self) -> str:
        name = f"store_{os.getpid()}_{next(_databases)}"
        self.admin(f'CREATE DATABASE "{name}"')
        return name

    def drop_database(self, name: str) -> None:
        self.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _as_server_user() -> list[str]:
    if os.geteuid() != 0:
        return []
    return ["setpriv", f"--reuid={SUPERUSER}", f"--regid={SUPERUSER}", "--init-groups", "--"]


def _run(command: list[str]) -> None:
    finished = subprocess.run(
        command, capture_output=True, text=True, timeout=START_SECONDS, check=False
    )
    if finished.returncode != 0:
        raise RuntimeError(f"{command[len(_as_server_user())]} failed: {finished.stderr.strip()}")


@contextlib.contextmanager
def running_postgresql() -> Iterator[PostgresServer]:
    """Start a server (or skip the test when there are no binaries); stop and remove it."""
    binaries = find_binaries()
    if binaries is None:
        pytest.skip(NO_BINARIES)
    directory = Path(tempfile.mkdtemp(prefix="artifactize-pg-"))
    data = directory / "data"
    if os.geteuid() == 0:
        user = pwd.getpwnam(SUPERUSER)
        os.chown(directory, user.pw_uid, user.pw_gid)
    prefix = _as_server_user()
    server = PostgresServer(binaries, directory, free_port())
    started = False
    try:
        _run(
            [
                *prefix,
                str(binaries / "initdb"),
                "-D",
                str(data),
                "-U",
                SUPERUSER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ]
        )
        options = (
            f"-p {server.port} -k {directory} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c max_connections=200"
        )
        _run(
            [
                *prefix,
                str(binaries / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-l",
                str(directory / "server.log"),
                "-w",
                "-t",
                str(START_SECONDS),
                "start",
            ]
        )
        started = True
        yield server
    finally:
        if started or (data / "postmaster.pid").exists():
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                _run(
                    [
                        *prefix,
                        str(binaries / "pg_ctl"),
                        "-D",
                        str(data),
                        "-m",
                        "immediate",
                        "-w",
                        "stop",
                    ]
                )
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def postgresql_server() -> Iterator[PostgresServer]:
    with running_postgresql() as server:
        yield server


@pytest.fixture
def postgresql_url(postgresql_server: PostgresServer) -> Iterator[str]:
    name = postgresql_server.create_database()
    try:
        yield postgresql_server.url(name)
    finally:
        postgresql_server.drop_database(name)
