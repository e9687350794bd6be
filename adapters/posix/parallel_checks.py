"""``ParallelChecks`` over ``fork``: each check in a child process.

Why processes and not threads: the checks are stats with Python around each, and CPython's
interpreter lock lets only one thread run that Python at a time (two threads measured
slower than one on two cores). A forked child starts with the caller's memory as it is
(copied only where written), so a check needs no data sent to it, and it answers with one
byte through a pipe.

What keeps it safe:

- It forks only from a process with one thread (``threading.active_count() == 1``): a
  child of a threaded process can inherit a lock another thread held (CPython 3.12 warns
  of it). Otherwise, and where there is no ``fork`` or one CPU, the checks run one after
  the other in the caller.
- A child only runs its check, writes its answer and leaves with ``os._exit``: no
  ``atexit`` handler, no buffered output flushed twice, nothing of the caller's
  (connections, files) closed or written. Its stop signals are the system's defaults (not
  the caller's handlers, nor an event loop's wake-up pipe, which it shares).
- Nothing outlives the caller's block: every child is killed (once it has answered, it is
  already leaving) and reaped when ``started``'s block ends, however; a child also watches
  a lifeline pipe whose only write end the caller holds, and leaves at once when it sees
  the end of it: when the caller dies, even by ``SIGKILL``, the kernel closes that end.
- A child that raises, is killed or answers anything but True counts as False: the caller
  then does the whole work the checks would have saved (nothing is reused on a doubt). A
  fork the system refuses (``EAGAIN``, ``ENOMEM``) leaves the checks to the caller, in turn.
"""

from __future__ import annotations

import contextlib
import functools
import os
import selectors
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import NoReturn

# At most this many checks run at once, however many CPUs there are: past it a fork and a
# piece of the log cost about what the piece saves.
MAX_CHECK_PROCESSES = 8
_TRUE = b"1"


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the platform tells it), no more
    than its control group's CPU quota allows (a container limited to 1.5 CPUs: 2)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    quota = cgroup_cpu_quota(_text_of("/proc/self/cgroup") or "", CGROUP_ROOT)
    cpus = cpus or 1
    return max(1, cpus if quota is None else min(cpus, quota))


CGROUP_ROOT = "/sys/fs/cgroup"


def cgroup_cpu_quota(memberships: str, root: str) -> int | None:
    """The fewest whole CPUs (rounded up) that the CPU quotas of this process's control
    group and of every group above it allow; None when none sets one. ``memberships`` is
    ``/proc/self/cgroup``'s text: cgroup v2 (``0::/path``, ``cpu.max`` "QUOTA PERIOD" or
    "max PERIOD") and v1 (``N:...cpu...:/path``, ``cpu.cfs_quota_us``, -1 for none, over
    ``cpu.cfs_period_us``) are both read."""
    quotas: list[int] = []
    for line in memberships.splitlines():
        number, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if number == "0" and controllers == "":
            folder, read = root, _v2_quota
        elif "cpu" in controllers.split(","):
            folder, read = os.path.join(root, controllers), _v1_quota
        else:
            continue
        parts = [part for part in path.split("/") if part and part not in (".", "..")]
        for depth in range(len(parts), -1, -1):
            found = read(os.path.join(folder, *parts[:depth]))
            if found is not None:
                quotas.append(found)
    return min(quotas) if quotas else None


def _whole_cpus(quota: str, period: str) -> int | None:
    try:
        used, every = int(quota), int(period)
    except ValueError:
        return None
    return -(-used // every) if used > 0 and every > 0 else None


def _v2_quota(folder: str) -> int | None:
    fields = (_text_of(os.path.join(folder, "cpu.max")) or "").split()
    return _whole_cpus(*fields) if len(fields) == 2 else None


def _v1_quota(folder: str) -> int | None:
    quota = _text_of(os.path.join(folder, "cpu.cfs_quota_us"))
    period = _text_of(os.path.join(folder, "cpu.cfs_period_us"))
    return None if quota is None or period is None else _whole_cpus(quota, period)


def _text_of(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as file:
            return file.read(4096)
    except (OSError, ValueError):
        return None


class ForkedChecks:
    """``ParallelChecks``: each check in a forked child, the caller free meanwhile."""

    def __init__(self, *, max_workers: int = MAX_CHECK_PROCESSES) -> None:
        self._max_workers = max_workers

    def workers(self) -> int:
        if not _may_fork():
            return 1
        return max(1, min(self._max_workers, usable_cpus()))

    @contextmanager
    def started(self, checks: Sequence[Callable[[], bool]]) -> Iterator[Callable[[], bool]]:
        """Each check in a child of its own, forked now; the caller is free until it asks.
        Where a child cannot be had (one check, a second thread, ``fork`` refused), every
        check runs in the caller when it asks."""
        in_turn = functools.cache(lambda: all(check() for check in checks))
        if len(checks) < 2 or not _may_fork():
            yield in_turn
            return
        with _forked(checks) as children:
            if children is None:
                yield in_turn
            else:
                yield functools.cache(lambda: _all_answered_true(children))


@contextmanager
def _forked(checks: Sequence[Callable[[], bool]]) -> Iterator[list[_Child] | None]:
    """A child per check, killed and reaped when the block ends; None (and none left) when
    the system refuses a fork (a process limit, memory it will not promise a copy of a
    large process)."""
    lifeline_read, lifeline_write = os.pipe()
    children: list[_Child] = []
    try:
        refused = False
        try:
            for check in checks:
                inherited = (lifeline_write, *(child.answers for child in children))
                children.append(_Child.start(check, lifeline_read, inherited))
        except OSError:
            refused = True
        os.close(lifeline_read)
        lifeline_read = -1
        if refused:
            for child in children:
                child.end()
            yield None
        else:
            yield children
    finally:
        for child in children:
            child.end()
        for fd in (lifeline_read, lifeline_write):
            if fd >= 0:
                os.close(fd)


def _all_answered_true(children: Sequence[_Child]) -> bool:
    """Whether every child answered True, read in the order they answer: the first other
    answer decides at once, whoever is still at work."""
    with selectors.DefaultSelector() as waiting:
        for child in children:
            waiting.register(child.answers, selectors.EVENT_READ, child)
        while waiting.get_map():
            for key, _ in waiting.select():
                waiting.unregister(key.fd)
                if not key.data.answer():
                    return False
    return True


def _may_fork() -> bool:
    return hasattr(os, "fork") and threading.active_count() == 1


class _Child:
    """A forked child running one check; its answer comes through the pipe ``answers``."""

    def __init__(self, pid: int, answers: int) -> None:
        self._pid = pid
        self.answers = answers
        self._reaped = False

    @classmethod
    def start(cls, check: Callable[[], bool], lifeline: int, inherited: tuple[int, ...]) -> _Child:
        """``check`` in a child forked now; ``inherited``: the caller's descriptors the
        child closes (the lifeline's write end, its siblings' answers)."""
        answers_read, answers_write = os.pipe()
        try:
            pid = os.fork()
        except BaseException:
            os.close(answers_read)
            os.close(answers_write)
            raise
        if pid == 0:  # the child: never returns
            _child(check, answers_write, lifeline, (answers_read, *inherited))
        os.close(answers_write)
        return cls(pid, answers_read)

    def answer(self) -> bool:
        """Whether the child answered True (it is leaving once it has answered)."""
        data = b""
        while len(data) < len(_TRUE):
            piece = os.read(self.answers, len(_TRUE) - len(data))
            if not piece:
                break
            data += piece
        return data == _TRUE

    def end(self) -> None:
        """Killed if still running, then reaped; its pipe closed."""
        if not self._reaped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self._pid, 0)  # a signal's interruption is retried (PEP 475)
            self._reaped = True
            os.close(self.answers)


def _child(
    check: Callable[[], bool], answers: int, lifeline: int, inherited: tuple[int, ...]
) -> NoReturn:
    """The forked child's whole life: leave when the caller's end of the lifeline closes,
    else answer the check and leave, always through ``os._exit``."""
    code = 1
    try:
        _default_signals()
        for fd in inherited:
            os.close(fd)
        threading.Thread(target=_leave_when_orphaned, args=(lifeline,), daemon=True).start()
        if check():
            os.write(answers, _TRUE)
        code = 0
    except BaseException:  # no answer is the answer: the caller counts it False
        pass
    finally:
        os._exit(code)


def _default_signals() -> None:
    """A stop signal ends the child at once, as the system's default does: the caller's
    handlers are the caller's (an event loop's would write to the caller's wake-up pipe,
    which the child shares, and so stop the caller's command)."""
    signal.set_wakeup_fd(-1)
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)


def _leave_when_orphaned(lifeline: int) -> NoReturn:
    """The lifeline's write end is held only by the caller: its end means the caller died."""
    with contextlib.suppress(OSError):
        while os.read(lifeline, 1):
            pass
    os._exit(1)
