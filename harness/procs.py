"""Whether a process recorded by pid (a grid's driver, in its lock or its progress file) still runs on
this host: the pid and the start time of the process, so that a pid reused by another process does
not pass for the one recorded."""

from __future__ import annotations

import os
from pathlib import Path


def process_start(pid: int) -> str | None:
    """When process ``pid`` started, from Linux's ``/proc``.

    With the pid it names one process, not whichever later reuses the number.

    Args:
        pid: the process's id.

    Returns:
        The start time in clock ticks since boot, as text, or None where that cannot be read.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[19]  # field 22; the command name may hold spaces
    except (OSError, IndexError):
        return None


def process_alive(pid: int, started: str | None) -> bool:
    """Whether process ``pid`` of this host still runs.

    Its pid must answer (another user's process answers with PermissionError: alive) and, where ``started``
    was recorded, it must have started then (a reused pid is another process).

    Args:
        pid: the process's id.
        started: its recorded start time (:func:`process_start`), or None.

    Returns:
        True for a running process (also where its start time cannot be read now); False for a zombie,
        which has ended though its parent has not yet reaped it (a driver killed with SIGKILL is one
        until its shell waits for it: its watchdog must count it gone).
    """
    try:
        os.kill(pid, 0)
    except PermissionError:
        pass
    except OSError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        state = ""
    if state in ("Z", "X"):
        return False
    return started is None or process_start(pid) in (None, started)
