"""SIGHUP (a closed terminal, a dropped ssh session) and SIGQUIT end a command exactly like
SIGTERM: exit 2, its process group stopped (0 of 4 survive, before any next command), and
the Run settled by the command itself (CANCELLED, not OWNER_DIED from a later sweep)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.support.hostile import (
    CLI_SECONDS,
    COMMAND_KINDS,
    GROUP_CHILDREN,
    HostileRepo,
    alive,
    reap_strays,
    record_counts,
    scaled,
    survivors,
    wait_for_pids,
)

STOPS = [signal.SIGHUP, signal.SIGQUIT, signal.SIGTERM]


@pytest.fixture
def repo(tmp_path: Path) -> HostileRepo:
    return HostileRepo(tmp_path)


@pytest.mark.parametrize("stop", STOPS, ids=lambda s: s.name)
@pytest.mark.parametrize("kind", ["verify-runtime", "tools-check-agent", "tools-check-human"])
def test_a_hang_up_stops_the_command_like_sigterm(
    repo: HostileRepo, kind: str, stop: signal.Signals
) -> None:
    args, pids = COMMAND_KINDS[kind]
    for _ in range(scaled(1)):
        repo.pids(pids).unlink(missing_ok=True)
        process = repo.start(*args)
        group: list[tuple[int, float]] = []
        try:
            group = wait_for_pids(repo.pids(pids))
            assert len(alive(group)) == GROUP_CHILDREN + 1
            process.send_signal(stop)
            out, err = process.communicate(timeout=CLI_SECONDS)
            left = survivors(group)
            record_counts(f"{stop.name} to {kind}: processes (failures: survivors)",
                          len(group), len(left))  # fmt: skip
            assert process.returncode == 2, err
            assert "Traceback" not in err
            assert left == []
            if kind == "verify-runtime":
                run = json.loads(out)
                shown = json.loads(repo.run("--json", "run", "show", run["id"]).stdout)
                assert shown["status"] == "ERROR"
                (request,) = shown["requests"]
                assert request["errorCode"] == "CANCELLED"
        finally:
            reap_strays(group)
            if process.poll() is None:
                process.kill()
                process.communicate()
