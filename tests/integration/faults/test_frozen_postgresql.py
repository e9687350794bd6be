"""A frozen PostgreSQL: every process of a real server stopped with SIGSTOP (alive, its
sockets still accepting, nothing answering), under ``artifactize server run --database``.
``GET /v1/health`` answers within 2 s: 503 while the database is frozen, 200 again within
5 s of SIGCONT; the server then still stops gracefully on SIGTERM."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import psutil
import pytest

from tests.integration.test_review_store_server import STOP_SECONDS, server_process
from tests.support.hostile import record_counts, scaled
from tests.support.postgres import PostgresServer, running_postgresql

ANSWER_SECONDS = 2.0  # the promise: /v1/health answers within this
BACK_SECONDS = 5.0  # and is 200 again within this once the database answers
FROZEN_CHECKS = 3  # health calls while frozen (each must answer 503 in time)


@pytest.fixture
def frozen_pg() -> Iterator[PostgresServer]:
    """A PostgreSQL of this test's own (freezing the shared one would stall others)."""
    with running_postgresql() as server:
        yield server


def server_processes(server: PostgresServer) -> list[psutil.Process]:
    pid = int((server.directory / "data" / "postmaster.pid").read_text().split()[0])
    postmaster = psutil.Process(pid)
    return [postmaster, *postmaster.children(recursive=True)]


def health(url: str) -> tuple[int, float]:
    started = time.monotonic()
    with httpx2.Client(base_url=url, timeout=30.0, trust_env=False) as http:
        status = http.get("/v1/health").status_code
    return status, time.monotonic() - started


def test_health_answers_503_while_postgresql_is_frozen(
    tmp_path: Path, frozen_pg: PostgresServer
) -> None:
    database = frozen_pg.url(frozen_pg.create_database())
    state = tmp_path / "state"
    with server_process(state, extra=("--database", database)) as server:
        assert health(server.url)[0] == 200
        late = 0
        for _ in range(scaled(1)):
            frozen = server_processes(frozen_pg)
            for process in frozen:
                process.send_signal(signal.SIGSTOP)
            try:
                for _ in range(FROZEN_CHECKS):
                    status, seconds = health(server.url)
                    late += seconds > ANSWER_SECONDS
                    assert (status, seconds < ANSWER_SECONDS) == (503, True)
            finally:
                for process in frozen:
                    process.send_signal(signal.SIGCONT)
            thawed = time.monotonic()
            while True:
                status, seconds = health(server.url)
                assert seconds < ANSWER_SECONDS
                if status == 200:
                    break
                assert time.monotonic() - thawed < BACK_SECONDS, "no 200 within 5 s of SIGCONT"
            record_counts("frozen PostgreSQL: health calls (failures: late)", FROZEN_CHECKS, late)
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(STOP_SECONDS) == 0
