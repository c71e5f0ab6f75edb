"""Processes by PID: start one in its own process group, tell whether it lives, end its group.

Processes started here are remembered so that they are reaped (a child that has exited stays a zombie,
and looks alive to kill(pid, 0), until its parent waits for it). Others are looked up in /proc.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path

_children: dict[int, subprocess.Popen[bytes]] = {}


def spawn(argv: list[str], log: Path, env: dict[str, str]) -> int:
    """Start `argv` with output to `log`, in a new session and process group; return its PID."""
    with open(log, "wb") as out:
        # own session: `down` ends the whole group, and ^C on the starting terminal does not reach it
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    _children[proc.pid] = proc
    return proc.pid


def start_ticks(pid: int) -> int | None:
    """Process start time in clock ticks since boot (None if no such process): with the PID, it names a
    process uniquely, so a reused PID can be told apart."""
    stat = _stat(pid)
    return int(stat[19]) if stat else None


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie has exited)."""
    proc = _children.get(pid)
    if proc is not None:
        return proc.poll() is None
    stat = _stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")


def wait_exit(pid: int, deadline: float) -> None:
    """Wait until `pid` has exited, or until `deadline` (time.monotonic)."""
    proc = _children.get(pid)
    if proc is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        if proc.poll() is not None:
            del _children[pid]
        return
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)  # not our child: no way to wait on its exit but to look


def signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes in process group `pgid`."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat and int(stat[2]) == pgid and stat[0] not in ("Z", "X"):
                members.append(int(entry.name))
    return members


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name: state, ppid, pgrp, ..."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
