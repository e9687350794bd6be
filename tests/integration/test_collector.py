"""The collector adapters (``adapters/collector.py``) on CPython's real ``gc``."""

from __future__ import annotations

import gc
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from artifactize.adapters.collector import (
    freeze_collector,
    pause_collector,
    pause_collector_to_exit,
    pause_collector_until_decided,
    pause_keeping,
)
from artifactize.domain.reviews.run.policy import VerifyOptions
from artifactize.entrypoints.bootstrap import Services
from artifactize.entrypoints.cli.global_options import GlobalOptions
from artifactize.entrypoints.container import Container
from artifactize.entrypoints.errors import CommandError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "handbook"


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_a_freeze_leaves_what_existed_out_and_collects_what_is_new() -> None:
    before = gc.get_freeze_count()
    assert before == 0  # nothing else froze objects in this process
    with freeze_collector():
        assert gc.get_freeze_count() > 0  # what existed is frozen
        _Cycle()  # new cyclic garbage
        assert gc.collect() >= 1  # still collected inside the block
    assert gc.get_freeze_count() == 0  # and everything is back in the oldest generation


def test_a_freeze_inside_another_changes_nothing() -> None:
    gc.freeze()
    try:
        assert gc.get_freeze_count() > 0
        with freeze_collector():
            pass
        # not unfrozen by the inner block (an unfreeze empties the permanent generation; its
        # count is not compared exactly: a frozen object freed meanwhile leaves it)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_a_pause_disables_the_collector_and_restores_it() -> None:
    assert gc.isenabled()
    with pause_collector():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_pause_to_exit_keeps_what_is_alive_out_of_the_next_passes() -> None:
    assert gc.isenabled() and gc.get_freeze_count() == 0
    try:
        with pause_collector_to_exit():
            assert not gc.isenabled()
            kept = [_Cycle() for _ in range(100)]  # alive at the end of the block
        assert gc.isenabled()
        assert gc.get_freeze_count() >= len(kept)  # frozen: no pass traverses them again
    finally:
        gc.unfreeze()


def test_a_pause_to_exit_inside_a_disabled_collector_changes_nothing() -> None:
    gc.disable()
    try:
        with pause_collector_to_exit():
            pass
        assert not gc.isenabled()
        assert gc.get_freeze_count() == 0
    finally:
        gc.enable()


def test_a_pause_until_decided_freezes_only_once_decided() -> None:
    """A replay that holds ends frozen, as a short command does; one that does not hold ends
    a plain pause, so the whole ``verify`` after it starts with nothing frozen."""
    assert gc.isenabled() and gc.get_freeze_count() == 0
    with pause_collector_until_decided():
        assert not gc.isenabled()
        dropped = [_Cycle() for _ in range(100)]
    assert gc.isenabled() and gc.get_freeze_count() == 0 and dropped
    try:
        with pause_collector_until_decided() as exiting:
            kept = [_Cycle() for _ in range(100)]
            exiting()
            assert not gc.isenabled()
        assert gc.isenabled()
        assert gc.get_freeze_count() >= len(kept)
    finally:
        gc.unfreeze()
    gc.disable()
    try:
        with pause_collector_until_decided() as exiting:
            exiting()
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.enable()


def test_a_keeping_pause_inside_a_freeze_freezes_what_it_allocated() -> None:
    """A Run's documents, allocated in ``pause_keeping`` blocks inside the Run's freeze,
    are left out of every pass until the Run ends, then go back with the rest."""
    with freeze_collector():
        frozen = gc.get_freeze_count()
        with pause_keeping():
            assert not gc.isenabled()
            kept = [[index] for index in range(1000)]  # containers the collector tracks
        assert gc.isenabled()
        assert gc.get_freeze_count() >= frozen + len(kept)  # the new lists joined them
    assert gc.get_freeze_count() == 0


def test_a_keeping_pause_outside_a_freeze_is_a_pause() -> None:
    with pause_keeping():
        assert not gc.isenabled()
        kept = [[index] for index in range(100)]
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0  # nothing would ever give them back
    assert kept


def test_a_keeping_pause_under_a_freeze_for_life_freezes_nothing_more() -> None:
    """A freeze that nothing gives back (``artifactize mcp`` freezes its heap for the
    server's life) is not a ``freeze_collector`` block: what a keeping pause allocates under
    it stays collectable, or it would be frozen for good. (Told by the blocks this module
    holds open, not by ``gc.get_freeze_count()``, which walks every frozen object.)"""
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with pause_keeping():
            kept = [[index] for index in range(1000)]
        assert gc.get_freeze_count() == frozen
        with freeze_collector():  # under a freeze it did not make: it holds none either
            with pause_keeping():
                more = [[index] for index in range(1000)]
            assert gc.get_freeze_count() == frozen
        assert kept and more
    finally:
        gc.unfreeze()


def _services(tmp_path: Path) -> Services:
    """The composition root's services over a copy of the bundled example."""
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    options = GlobalOptions(repo=str(repo), state_dir=str(tmp_path / "state"))
    return Services(Container(), options, progress=lambda _: None)


def _choose(repo: str, state: str) -> VerifyOptions:
    return VerifyOptions(repo=repo, state_dir=state)


def test_a_prepared_verify_holds_its_workspace_and_keys_frozen_until_it_is_closed(
    tmp_path: Path,
) -> None:
    """``prepare_verify`` enters the Run's freeze before the load: the loaded workspace and
    the keys join the frozen objects as their pauses end, so no pass traverses them before
    the Run (at 10,000 Artifacts ~0.4 s of gen-0, gen-1 and gen-2 passes did); ``close``
    (or the Run's end) gives them back."""
    services = _services(tmp_path)
    assert gc.get_freeze_count() == 0
    prepared = services.prepare_verify(None, True, _choose)
    workspace, keys = prepared.service.workspace, prepared.keys
    try:
        assert gc.isenabled() and gc.get_freeze_count() > 0
        assert keys and all(gc.is_tracked(key) for key in keys)
        in_a_generation = {id(item) for item in gc.get_objects()}
        assert id(workspace) not in in_a_generation  # frozen: out of every generation
        assert not any(id(key) in in_a_generation for key in keys)
    finally:
        prepared.close()
    assert gc.get_freeze_count() == 0
    assert id(workspace) in {id(item) for item in gc.get_objects()}  # given back
    prepared.close()  # once only: again is nothing


def test_a_prepared_verify_that_fails_gives_its_freeze_back(tmp_path: Path) -> None:
    """A selection that matches nothing fails inside the freeze: nothing stays frozen."""
    services = _services(tmp_path)
    with pytest.raises(CommandError):
        services.prepare_verify("no-such-artifact/no-such-eval", False, _choose)
    assert gc.isenabled() and gc.get_freeze_count() == 0


_REPORT_FREEZE = """
import gc, json, sys
from artifactize.entrypoints.cli.launch import main
try:
    main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
sys.stderr.write(json.dumps({"code": code, "frozen": gc.get_freeze_count(), "on": gc.isenabled()}))
"""


@pytest.mark.process  # a fresh interpreter, as a user's command runs
@pytest.mark.parametrize("command", [("config", "check"), ("config", "graph"), ("status",)])
def test_a_short_command_ends_with_its_workspace_frozen(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """``config check``, ``config graph`` and ``status`` keep their loaded workspace to the
    exit: it is frozen when the command ends, and the collector is on again, so no pass
    traverses it on the way out (0.3-0.5 s at 10,000 Artifacts for ``config check``)."""
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    args = ["--repo", str(repo), "--state-dir", str(tmp_path / "state"), "--json", *command]
    done = subprocess.run(
        [sys.executable, "-c", _REPORT_FREEZE, *args], capture_output=True, text=True, check=False
    )
    report = json.loads(done.stderr.splitlines()[-1])
    assert report["code"] in (0, 1, None), done.stdout  # 1: status with evals not GREEN
    assert json.loads(done.stdout)  # the command answered in full
    assert report["on"] and report["frozen"] > 1000
