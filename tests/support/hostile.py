"""Helpers of the hostile suite: a tool that leaves a whole process group behind unless
someone cleans it up, and checks by psutil identity (pid + start time, never a bare pid)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import psutil

GROUP_CHILDREN = 3  # the tool's own children: with the tool itself, 4 processes per group
APPEAR_SECONDS = 30.0
GONE_SECONDS = 10.0


def spawning_tool_script(pid_file: Path) -> str:
    """A Python tool that starts ``GROUP_CHILDREN`` sleepers in its group, writes the pids
    of all four to ``pid_file`` (atomically), then sleeps. (Any ``python3``: no psutil.)"""
    return (
        "import json, os, subprocess, sys, time\n"
        "kids = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"        for _ in range({GROUP_CHILDREN})]\n"
        "ids = [os.getpid()] + [k.pid for k in kids]\n"
        f"target = {str(pid_file)!r}\n"
        "with open(target + '.tmp', 'w') as out:\n"
        "    json.dump(ids, out)\n"
        "os.rename(target + '.tmp', target)\n"
        "time.sleep(600)\n"
    )


def wait_for_pids(pid_file: Path, timeout: float = APPEAR_SECONDS) -> list[tuple[int, float]]:
    deadline = time.monotonic() + timeout
    while not pid_file.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"the tool never wrote {pid_file}")
        time.sleep(0.02)
    identities = []
    for pid in json.loads(pid_file.read_text()):
        try:  # the start time right away: later checks must never trust a bare pid
            identities.append((int(pid), psutil.Process(pid).create_time()))
        except psutil.NoSuchProcess:
            continue
    return identities


def alive(identities: list[tuple[int, float]]) -> list[int]:
    """Pids of ``identities`` still running as the same process (not a zombie)."""
    living = []
    for pid, created in identities:
        try:
            process = psutil.Process(pid)
            if process.create_time() == created and process.status() != psutil.STATUS_ZOMBIE:
                living.append(pid)
        except psutil.NoSuchProcess:
            continue
    return living


def survivors(identities: list[tuple[int, float]], timeout: float = GONE_SECONDS) -> list[int]:
    """The processes of ``identities`` still alive after up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    left = alive(identities)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = alive(identities)
    return left


def reap_strays(identities: list[tuple[int, float]]) -> None:
    """Kill what a failing test left behind, by identity, so one failure stays one."""
    for pid in alive(identities):
        try:
            process = psutil.Process(pid)
            if process.create_time() == dict(identities)[pid]:
                process.kill()
        except psutil.NoSuchProcess:
            continue
