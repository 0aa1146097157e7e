"""Whether a process recorded by pid (a grid's driver, in its lock or its progress file) still runs on
this host: the pid and the start time of the process, so that a pid reused by another process does
not pass for the one recorded."""

from __future__ import annotations

import os
from pathlib import Path


def process_start(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, Linux ``/proc``), or None where that
    cannot be read: with the pid it names one process, not whichever later reuses the number."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[19]  # field 22; the command name may hold spaces
    except (OSError, IndexError):
        return None


def process_alive(pid: int, started: str | None) -> bool:
    """Whether process ``pid`` of this host still runs: its pid answers (another user's process
    answers with PermissionError: alive) and, where ``started`` was recorded, it started then (a
    reused pid is another process)."""
    try:
        os.kill(pid, 0)
    except PermissionError:
        pass
    except OSError:
        return False
    return started is None or process_start(pid) in (None, started)
