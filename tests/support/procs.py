"""Processes seen from /proc (Linux): what a signal test and bench/hostile_cases.py look for."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path


def alive(pid: int) -> bool:
    """``pid`` is a running process (not a zombie waiting to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (from /proc/*/stat)."""
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(entry.name))
    return out


def running_on(path: Path) -> list[int]:
    """The live processes other than this one whose command line names ``path``."""
    mark, out = str(path).encode(), []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if mark in (entry / "cmdline").read_bytes():
                    out.append(int(entry.name))
            except OSError:
                continue
    return [pid for pid in out if alive(pid)]


def wait_for(condition: Callable[[], bool], seconds: float) -> bool:
    """Poll ``condition`` every 50 ms for ``seconds``; its last value."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return condition()
