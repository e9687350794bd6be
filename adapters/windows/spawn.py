"""Starting a program on Windows inside its own kill-on-close Job.

The program is created suspended (``CREATE_SUSPENDED``), assigned to a fresh Job, and only
then resumed, so not one instruction of it runs outside the Job and every descendant it
starts is in the Job too. It gets its own console process group
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

from adapters.windows import win32
from adapters.windows.command_line import (
    batch_command_line,
    is_batch_file,
    program_command_line,
)
from adapters.windows.job import Job
from ports.process import ProcessSpec

__all__ = ["CREATE_NEW_PROCESS_GROUP", "CREATE_SUSPENDED", "JobChild", "spawn_in_job"]

CREATE_SUSPENDED = 0x0000_0004
CREATE_NEW_PROCESS_GROUP = 0x0000_0200


@dataclass
class JobChild:
    """A started program and the Job that holds it and all its descendants."""

    popen: subprocess.Popen[bytes]
    job: Job

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


def spawn_in_job(spec: ProcessSpec, job_name: str | None = None) -> JobChild:
    """Start ``spec`` suspended, admit it to a new Job, resume it. Raises ``OSError`` or
    ``ValueError`` (``UnsafeArguments`` among them) when it could not be started; nothing
    is left running then."""
    executable, command_line = command_for(spec.argv)
    job = Job(job_name)
    try:
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
    except BaseException:
        job.close()
        raise
    child = JobChild(popen, job)
    try:
        job.admit_suspended(popen.pid)
    except BaseException:
        popen.wait()  # admit_suspended terminated it
        child.close_streams()
        job.close()
        raise
    return child
