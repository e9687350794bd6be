"""POSIX detached launcher: start a program for the reviewer and let it go.

How a launch goes:

1. The program is started without a shell (explicit argv, cwd and the complete environment)
   as the leader of a new session (``setsid``), so it has its own process group, no
   controlling terminal, and a Ctrl-C or cleanup aimed at artifactize's group never reaches
   it. stdin is ``/dev/null``.
2. Without an observer, stdout and stderr are ``/dev/null`` too (``request tool``,
   ``tools check``). With one, they are pipes, and one daemon thread per pipe reads it to EOF
   and hands every chunk to the observer, so the program never blocks on a full pipe, even
   after the review that wanted its lines has closed.
3. SIGPIPE stays ignored in the child: Python ignores it at start-up and
   ``restore_signals=False`` keeps that disposition across ``exec``, so a write to a pipe
   whose reader (artifactize) is gone fails with EPIPE instead of killing the program. Should
   the host process have restored the default action, a ``preexec_fn`` ignores it again.
4. Nothing waits for the program on the caller's behalf; ``launch`` returns right after the
   spawn. A daemon *reaper* thread blocks in ``waitpid`` for it, so when it exits while we
   still run it never lingers as our zombie, and with an observer the thread reports the
   exit status once both pipes are closed.

Why a reaper thread rather than a double fork: Python cannot double-fork without an
intermediate program (a shell or a second interpreter, one more process per launch, and
``fork`` in a threaded process is unsafe), and a double fork would lose the exit status the
review's Tool log shows. A thread parked in ``waitpid`` costs almost nothing; launches are
started by a person, a few per review. When artifactize exits first, the daemon thread dies
with it and the kernel re-parents the program to init (or the nearest subreaper), which
reaps it: the program survives our exit either way.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable, Mapping

from artifactize.adapters.launch_output import watch
from artifactize.ports.launch import LaunchObserver

__all__ = ["PosixDetachedLauncher"]


def _exit_status(returncode: int) -> tuple[int | None, int | None]:
    """A negative return code is the signal that ended the program."""
    return (returncode, None) if returncode >= 0 else (None, -returncode)


def _ignore_sigpipe() -> None:
    """In the child, before ``exec``: an ignored signal stays ignored in the new program."""
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)


def _sigpipe_fix() -> Callable[[], None] | None:
    """None when the child inherits an ignored SIGPIPE already (the normal Python case)."""
    return None if signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN else _ignore_sigpipe


class PosixDetachedLauncher:
    """``DetachedLauncher`` for POSIX systems (new session, reaper thread)."""

    def launch(
        self,
        argv: tuple[str, ...],
        cwd: str,
        env: Mapping[str, str],
        observer: LaunchObserver | None = None,
    ) -> None:
        if not argv:
            raise OSError("argv must name a program")
        output = subprocess.PIPE if observer is not None else subprocess.DEVNULL
        try:
            popen = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=output,
                cwd=cwd,
                env=dict(env),
                start_new_session=True,
                close_fds=True,
                restore_signals=False,
                preexec_fn=_sigpipe_fix(),  # only when SIGPIPE is not ignored already
            )
        except ValueError as exc:  # an argument or variable with a NUL byte
            raise OSError(str(exc)) from None
        watch(popen, observer, _exit_status)
