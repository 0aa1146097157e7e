"""Whether a process recorded by pid (a grid's driver, in its lock or its progress file) still runs on
this host: the pid and the start time of the process, so that a pid reused by another process does
not pass for the one recorded; and the text a lock names its process by (:func:`process_record`)."""

from __future__ import annotations

import os
import socket
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


def process_record(pid: int) -> str:
    """How a lock names process ``pid`` of this host: ``HOST PID START`` (:func:`process_start`, ``-``
    where it cannot be read), read back by :func:`record_holder`.

    Args:
        pid: the process's id.

    Returns:
        The record's text.
    """
    return f"{socket.gethostname()} {pid} {process_start(pid) or '-'}"


def record_holder(text: str) -> tuple[str, int, str | None] | None:
    """The process a record of :func:`process_record` names (an older record, ``PID`` alone, names one of
    this host).

    Args:
        text: the record, as read.

    Returns:
        (host, pid, start time or None), or None for a text that is no such record.
    """
    fields = text.split()
    if len(fields) == 1:
        fields = [socket.gethostname(), *fields]
    try:
        return fields[0], int(fields[1]), (fields[2] if len(fields) > 2 and fields[2] != "-" else None)
    except (ValueError, IndexError):
        return None
