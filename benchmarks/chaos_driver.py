"""The chaos run's driver processes (:mod:`chaos`, ``benchmarks/chaos.py``): one
``python -m harness.run`` of the chaos grid in a session of its own (:class:`Driver`), the
processes of that run noted while it runs, and the strays it leaves (:func:`wait_strays`), each
told from any other process by its pid and start time (``/proc/PID/stat``)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere: the harness of this checkout
    sys.path.insert(0, str(ROOT))

from harness.local_ray import RECORDS  # noqa: E402
from harness.procs import process_start  # noqa: E402

#: A checkpoint every second rather than the default 5 s: the cells last 5-10 s, and at 5 s a fast
#: host finished them before their first checkpoint, so that no round resumed a cell (CI, 10 rounds)
CHECKPOINT_EVERY_S = "1"
#: The chaos grid's name, which the driver's last count names (:data:`SUMMARY`).
GRID_NAME = "chaos"
#: Seconds between two looks for a finished run's processes (:func:`wait_strays`).
STRAY_POLL_S = 0.5
SUMMARY = re.compile(rf"^grid {GRID_NAME}: (\d+) done, (\d+) missing, (\d+) failed", re.MULTILINE)


def _stat(pid: int) -> list[str] | None:
    """``/proc/PID/stat`` after the command name: state, ppid, pgrp, session, ... (field 19: start)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def running(pid: int, start: str) -> bool:
    """Whether ``pid`` runs and is the process that started at ``start`` (a zombie has ended)."""
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X") and fields[19] == start


def session_members(session: int) -> dict[int, tuple[str, str]]:
    """The running processes of session ``session``: pid -> (start time, name)."""
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        fields = _stat(int(entry.name))
        if fields is not None and fields[0] not in ("Z", "X") and int(fields[3]) == session:
            found[int(entry.name)] = (fields[19], _comm(int(entry.name)))
    return found


def kill_if_same(pid: int, start: str, signum: int = signal.SIGKILL) -> bool:
    """Signal ``pid`` if it still is the process that started at ``start``; whether it was sent."""
    if not running(pid, start):
        return False
    with contextlib.suppress(OSError):
        os.kill(pid, signum)
        return True
    return False


class Driver:
    """``python -m harness.run --grid FILE --out OUT --num-cpus 2 --no-progress --checkpoint-every-s
    1`` in a session of its own, its output in ``log``, with ``env`` added to this process's
    environment (a test hook's variable). A thread notes, while it runs, the processes
    of its session and what its watchdog records (the record is removed when the watchdog ends), and
    its watchdog, found by the record's path on its command line: :meth:`strays` checks them all
    after the driver's end."""

    def __init__(self, grid_file: Path, out: Path, log: Path, env: dict[str, str] | None = None) -> None:
        self.log, self.env = log, dict(env or {})
        command = [sys.executable, "-m", "harness.run", "--grid", str(grid_file), "--out", str(out),
                   "--num-cpus", "2", "--no-progress", "--checkpoint-every-s", CHECKPOINT_EVERY_S]
        self.started_at = time.monotonic()
        with open(log, "w") as stream:
            self.process = subprocess.Popen(
                command, cwd=ROOT, stdout=stream, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=os.environ | self.env, start_new_session=True,
                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        self.pid = self.process.pid
        self.start = process_start(self.pid) or "-"
        self.record = RECORDS / f"driver-{self.pid}-{self.start}.json"
        self.seen: dict[int, tuple[str, str]] = {}  # pid -> (start, name): the run's processes
        self.ended_at: float | None = None
        self.code: int | None = None
        threading.Thread(target=self._wait, daemon=True).start()
        self.tracker = threading.Thread(target=self._track, daemon=True)
        self.tracker.start()

    def _wait(self) -> None:
        self.code = self.process.wait()
        self.ended_at = time.monotonic()

    def _note(self) -> None:
        for pid, (start, name) in session_members(self.pid).items():
            if pid != self.pid and int(start) >= int(self.start if self.start != "-" else 0):
                self.seen.setdefault(pid, (start, name))
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            record = json.loads(self.record.read_text())
            if int(record["driver"][0]) == self.pid and str(record["driver"][1]) == self.start:
                dog, dog_start = record["watchdog"]
                self.seen.setdefault(int(dog), (str(dog_start), "watchdog"))
                for pid, start, name in record["processes"]:
                    self.seen.setdefault(int(pid), (str(start), str(name)))
        if not any(name == "watchdog" for _, name in self.seen.values()):
            for entry in os.scandir("/proc"):
                if entry.name.isdigit() and str(self.record) in _cmdline(int(entry.name)):
                    start = process_start(int(entry.name))
                    if start is not None:
                        self.seen.setdefault(int(entry.name), (start, "watchdog"))

    def _track(self) -> None:
        while self.ended_at is None:
            self._note()
            time.sleep(0.3)
        self._note()  # what the end left

    def output(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def wait(self, timeout: float) -> int | None:
        """The exit code, or None if the driver still runs ``timeout`` seconds later."""
        try:
            self.process.wait(max(0.0, timeout))
        except subprocess.TimeoutExpired:
            return None
        while self.ended_at is None:
            time.sleep(0.01)
        return self.code

    def ray_child(self, name: str) -> tuple[int, str] | None:
        """The driver's own ``raylet`` or ``gcs_server`` (its child): (pid, start), or None."""
        for pid, (start, comm) in session_members(self.pid).items():
            fields = _stat(pid)
            if comm == name and fields is not None and int(fields[1]) == self.pid:
                return pid, start
        return None

    def workers(self) -> list[tuple[int, str]]:
        """The processes running a cell: ``ray::_execute_cell`` children of the driver's raylet."""
        raylet = self.ray_child("raylet")
        if raylet is None:
            return []
        found = []
        for pid, (start, _) in session_members(self.pid).items():
            fields, argv = _stat(pid), _cmdline(pid)
            if fields and int(fields[1]) == raylet[0] and argv and argv[0].startswith("ray::_execute_cell"):
                found.append((pid, start))
        return found

    def strays(self) -> dict[int, tuple[str, str]]:
        """The run's processes still running (the driver ended): noted ones, and its session's."""
        self.tracker.join(5)
        self._note()
        return {pid: (start, name) for pid, (start, name) in self.seen.items() if running(pid, start)}

    def end(self) -> None:
        """SIGKILL the driver (a hang), if it still runs."""
        if self.process.poll() is None:
            with contextlib.suppress(OSError):
                self.process.kill()
        self.wait(10)


def end_strays(strays: dict[int, tuple[str, str]]) -> None:
    """SIGKILL a run's strays (each still the process noted: same pid, same start time)."""
    for pid, (start, _) in strays.items():
        kill_if_same(pid, start, signal.SIGSTOP)  # no more children meanwhile
    for pid, (start, _) in strays.items():
        kill_if_same(pid, start)


def wait_strays(driver: Driver, stray_wait_s: float) -> dict[int, tuple[str, str]]:
    """The run's processes still running ``stray_wait_s`` after its driver ended (then ended here).

    Polled: once none of the run's processes runs, none can start again (whatever could start one is
    among them), so the wait ends there; it used to sleep the whole ``stray_wait_s`` (20 s, twice a
    round, a third of the chaos test's time)."""
    deadline = (driver.ended_at or time.monotonic()) + stray_wait_s
    while (strays := driver.strays()) and time.monotonic() < deadline:
        time.sleep(STRAY_POLL_S)
    end_strays(strays)
    return strays
