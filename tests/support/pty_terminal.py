"""A command run with its stderr on a real pseudo-terminal (its stdout a pipe): what a
person at a terminal sees of its progress."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_on_pty(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """Run with stderr on a pseudo-terminal (stdout a pipe); (code, stdout, terminal)."""
    master, slave = pty.openpty()
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=slave, cwd=REPO_ROOT, env=env)
    os.close(slave)
    seen = bytearray()
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the slave side closed
                    break
                if not chunk:
                    break
                seen.extend(chunk)
            elif process.poll() is not None:
                break
        out = process.communicate(timeout=30)[0]
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, out.decode(), seen.decode("utf-8", "replace")
