"""Starting a program on Windows inside its own kill-on-close Job.

The program is created suspended (``CREATE_SUSPENDED``); its identity (pid + start time) is
taken and shown to the caller's observer (a tool session journals it here, before the
program has run a single instruction); a fresh Job named after that identity (``job_name``)
is created and the program assigned to it; only then is it resumed. So nothing of it runs
outside the Job, every descendant it starts is in the Job too, and a later artifactize
process can find the Job again by name (recovery) without ever confusing a reused pid. It gets its own console process group
(``CREATE_NEW_PROCESS_GROUP``), so a Ctrl+C typed at artifactize's console is not delivered
to it: the Job is how it ends. No shell: the command line is built from ``argv`` by
``command_line`` (batch files through the system's ``cmd.exe`` with the safe-argument rule),
with the explicit cwd and the complete environment, nothing inherited but the three pipes.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from dataclasses import dataclass

import psutil

from artifactize.adapters.windows import win32
from artifactize.adapters.windows.command_line import (
    batch_command_line,
    is_batch_file,
    program_command_line,
)
from artifactize.adapters.windows.job import Job
from artifactize.ports.process import ProcessSpec
from artifactize.ports.sessions import ProcessIdentity, SpawnObserver

__all__ = [
    "CREATE_NEW_PROCESS_GROUP",
    "CREATE_SUSPENDED",
    "JobChild",
    "identity_of",
    "job_name",
    "spawn_in_job",
]

CREATE_SUSPENDED = 0x0000_0004
CREATE_NEW_PROCESS_GROUP = 0x0000_0200


def identity_of(pid: int) -> ProcessIdentity:
    """pid + start time, taken while we hold the child's handle (its pid cannot be reused)."""
    return ProcessIdentity(pid, psutil.Process(pid).create_time())


def job_name(identity: ProcessIdentity) -> str:
    """The name of the Job that holds the program ``identity`` names (the session namespace
    of the user, ``Local\\``): pid and start time, so a reused pid names another Job."""
    return f"Local\\artifactize-job-{identity.pid}-{identity.create_time:.6f}"


@dataclass
class JobChild:
    """A started program and the Job that holds it and all its descendants."""

    popen: subprocess.Popen[bytes]
    job: Job
    identity: ProcessIdentity

    def close_streams(self) -> None:
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def command_for(argv: tuple[str, ...]) -> tuple[str | None, str]:
    """(the executable CreateProcess starts, the command line it passes). Raises
    ``UnsafeArguments`` for a batch file argument cmd.exe could not receive literally."""
    program = argv[0]
    if is_batch_file(program):
        cmd_exe = os.path.join(win32.system_directory(), "cmd.exe")
        return cmd_exe, batch_command_line(cmd_exe, argv)
    # An absolute program runs as given; CreateProcess searches for anything else.
    return (program if os.path.isabs(program) else None), program_command_line(argv)


def spawn_in_job(spec: ProcessSpec, observe: SpawnObserver | None = None) -> JobChild:
    """Start ``spec`` suspended, show its identity to ``observe``, admit it to a new Job named
    after that identity, resume it. Raises ``OSError`` or ``ValueError`` (``UnsafeArguments``
    among them) when it could not be started, or what ``observe`` raised; nothing is left
    running then."""
    executable, command_line = command_for(spec.argv)
    popen = subprocess.Popen(
        command_line,
        executable=executable,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,
        cwd=spec.cwd,
        env=dict(spec.env),
        creationflags=CREATE_SUSPENDED | CREATE_NEW_PROCESS_GROUP,
        close_fds=True,
    )
    job: Job | None = None
    try:
        identity = identity_of(popen.pid)
        if observe is not None:
            observe(identity)
        job = Job(job_name(identity))
        job.admit_suspended(popen.pid)
    except BaseException:
        with contextlib.suppress(OSError):
            popen.kill()  # still suspended (or already ended by admit_suspended)
        popen.wait()
        for stream in (popen.stdin, popen.stdout, popen.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if job is not None:
            job.close()
        raise
    return JobChild(popen, job, identity)
