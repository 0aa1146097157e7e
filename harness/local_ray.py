"""The local Ray that a grid driver starts goes away with the driver, however the driver ends.

Ray starts its GCS, raylet, monitor, dashboard head and log monitor as children that the kernel kills
when the driver dies (``PR_SET_PDEATHSIG``). The raylet's children, the dashboard and runtime-env
agents and the workers, are not the driver's: after a driver killed with SIGKILL the two agents were
still running 20 s later (and a worker that was starting when its raylet died, in another case). So:

* **a watchdog**: before ``ray.init`` the driver starts ``python -m harness.local_ray --watch``, a
  small process in a session of its own (a terminal's Ctrl-C or a kill of the driver's process
  group does not reach it), which ignores SIGINT and SIGTERM and waits on a pipe from the driver.
  Every :data:`SCAN_S` it notes the processes that descend from the driver (pid, start time, name;
  those already there when it started are not the local Ray's and are left out) in a record file,
  ``<tmp>/varbo-bench-<uid>/driver-<pid>-<start>.json``. When the pipe closes (the driver is
  shutting down, or has ended however it ended), it ends those of them still running, the same pid
  with the same start time, and those they started since (:func:`end`), and the processes a dead
  raylet of theirs had started that were reparented before they were seen (:func:`raylet_orphans`),
  removes the record and exits; if the driver had died, it names what it ended in one line on stderr.
* **a reaper**: a driver that starts a local Ray first reads the records whose driver and watchdog
  are both gone (killed together) and ends their processes still running as recorded, naming them
  in one line. A record whose driver or watchdog runs is never touched, and nothing is ended that a
  record does not name, or that such a process did not start.
* **a liveness check**: :func:`lost` tells whether the local Ray's GCS or raylet has ended (their
  processes are this driver's children), cheap enough for every turn of the driver's loop.

A local Ray in Ray 2.60 always has a minimal dashboard head (for its usage statistics, even with
``include_dashboard=False``) and the two agents (the raylet starts them unconditionally; the
runtime-env agent takes part in starting workers): they cannot be left out, so they are ended here.

Stdlib only at import: the watchdog starts in a fraction of a second.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.procs import process_alive, process_start

#: Where the watchdogs keep their records (one folder per user).
RECORDS = Path(tempfile.gettempdir()) / f"varbo-bench-{os.getuid()}"
#: Seconds between two looks of the watchdog at the driver's processes.
SCAN_S = 1.0

#: This driver's watchdog (a Popen), while it runs.
_watchdog: list = [None]


def process_table() -> dict[int, tuple[int, str, str, str]]:
    """The processes of this host, read from ``/proc``.

    Returns:
        pid -> (parent pid, start time in clock ticks since boot as text, state, command name); a process that
        ended while being read is left out.
    """
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as handle:
                stat = handle.read()
            name, rest = stat.split("(", 1)[1].rsplit(")", 1)
            fields = rest.split()
            table[int(entry.name)] = (int(fields[1]), fields[19], fields[0], name)
        except (OSError, IndexError, ValueError):  # it ended meanwhile
            continue
    return table


def _name(pid: int, fallback: str) -> str:
    """A process's name for people: its script (``monitor.py``), its program (``raylet``) or Ray's
    title (``ray::DashboardAgent``)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        argv = [a.decode(errors="replace") for a in raw.split(b"\0") if a]
    except OSError:
        return fallback
    if argv and argv[0].startswith("ray::"):
        return argv[0].split()[0]
    words = [os.path.basename(w) for a in argv[:3] for w in a.split()[:1]]
    script = next((w for w in words[1:] if w.endswith(".py")), None)
    return script or (words[0] if words else fallback)


def descendants(roots: int | list[int], table: dict, skip: frozenset[int] = frozenset()) -> list[int]:
    """The processes below ``roots`` in ``table``.

    Args:
        roots: a pid or a list of pids.
        table: the process table (:func:`process_table`).
        skip: pids left out, with the processes below them.

    Returns:
        The descendants' pids, each once, in the order they were found (depth first).
    """
    children: dict[int, list[int]] = {}
    for pid, (parent, *_) in table.items():
        children.setdefault(parent, []).append(pid)
    found, stack = [], [roots] if isinstance(roots, int) else list(roots)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in skip and child not in found:
                found.append(child)
                stack.append(child)
    return found


def _running(pid: int, start: str) -> bool:
    """Whether ``pid`` still runs and is the process that started at ``start`` (a zombie has ended)."""
    try:
        rest = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return rest[0] not in ("Z", "X") and rest[19] == start


def end(processes: dict[int, tuple[str, str]]) -> list[str]:
    """End the processes that still run as recorded, and those they started since.

    Each is stopped first (SIGSTOP: a raylet does not start a worker meanwhile, which would be nobody's child
    once it is gone), then killed (SIGKILL: Ray has had its chance to shut down; what is left is an orphan).
    It waits up to 2 s for them to go.

    Args:
        processes: ``{pid: (start time, name)}`` as recorded.

    Returns:
        ``name (pid N)`` of each process it ended.
    """
    table = process_table()
    targets = {pid: start for pid, (start, _) in processes.items()
               if pid in table and table[pid][1] == start and table[pid][2] not in ("Z", "X")}
    for _ in range(2):  # stopped, then the children they started meanwhile too
        targets |= {pid: table[pid][1] for pid in descendants(list(targets), table)}
        for pid, start in targets.items():
            if _running(pid, start):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGSTOP)
        table = process_table()
    names = {pid: _name(pid, processes.get(pid, ("", table.get(pid, (0, "", "", "?"))[3]))[1])
             for pid in targets}
    for pid, start in targets.items():
        if _running(pid, start):  # checked again just before: the pid names the recorded process
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 2.0
    while any(_running(pid, start) for pid, start in targets.items()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [f"{names[pid]} (pid {pid})" for pid in targets]


def _write_record(path: Path, driver: tuple[int, str], processes: dict[int, tuple[str, str]]) -> None:
    record = {"driver": list(driver), "watchdog": [os.getpid(), process_start(os.getpid()) or "-"],
              "processes": [[pid, start, name] for pid, (start, name) in sorted(processes.items())]}
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(record))
    os.replace(temporary, path)


def _ticks_now() -> int:
    """Now, in the clock ticks since boot in which ``/proc`` gives a process's start time."""
    return int(float(Path("/proc/uptime").read_text().split()[0]) * os.sysconf("SC_CLK_TCK"))


def raylet_orphans(raylets: dict[int, tuple[int, int]], table: dict) -> dict[int, tuple[str, str]]:
    """The processes that dead or running raylets started and that are no longer below them.

    Such a process's environment names the raylet's pid (``RAY_RAYLET_PID``, which a raylet gives its workers
    and agents) and it started while that raylet ran, which a process of another raylet that reused the pid
    could not have. Such a process, started just before its raylet died, is reparented before the watchdog has
    seen it below the driver.

    Args:
        raylets: ``{pid: (start, end)}`` in clock ticks since boot, when each raylet started, and when it was
            first seen gone or, if it runs, now.
        table: the process table (:func:`process_table`).

    Returns:
        ``{pid: (start time, name)}`` of those processes, as :func:`end` takes them.
    """
    found = {}
    for pid, (_, start, state, comm) in table.items():
        owners = [raylet for raylet, (began, ended) in raylets.items() if began <= int(start) <= ended]
        if state in ("Z", "X") or not owners or pid in raylets:
            continue
        try:
            environment = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:  # another user's, or gone
            continue
        if any(f"RAY_RAYLET_PID={raylet}".encode() in environment for raylet in owners):
            found[pid] = (start, _name(pid, comm))
    return found


def watch(record: Path, driver: int, driver_start: str, earlier: frozenset[int] = frozenset()) -> int:
    """The watchdog's life (see the module's docstring); its stdin is the pipe from the driver.

    Args:
        record: the watchdog's record file.
        driver: the driver's pid.
        driver_start: the driver's start time (``-`` where unknown).
        earlier: the driver's processes before it started the watchdog (not the local Ray's).

    Returns:
        The watchdog's exit code, 0.
    """
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    earlier = earlier | {os.getpid()}
    recorded: dict[int, tuple[str, str]] = {}
    raylets: dict[int, list] = {}  # pid -> [start, first seen gone]: for raylet_orphans
    saved = None
    while True:
        readable, _, _ = select.select([0], [], [], SCAN_S)
        closed = os.getppid() != driver or bool(readable and not os.read(0, 4096))
        table, now = process_table(), _ticks_now()
        for pid in descendants(driver, table, earlier):
            if recorded.get(pid, ("",))[0] != table[pid][1]:  # new (or a new process of that pid)
                recorded[pid] = (table[pid][1], _name(pid, table[pid][3]))
            if table[pid][3] == "raylet":
                raylets.setdefault(pid, [int(table[pid][1]), None])
        recorded = {pid: (start, name) for pid, (start, name) in recorded.items()
                    if pid in table and table[pid][1] == start and table[pid][2] != "Z"}
        for pid, times in raylets.items():
            if times[1] is None and pid not in recorded:
                times[1] = now
        if recorded != saved:
            with contextlib.suppress(OSError):
                _write_record(record, (driver, driver_start), recorded)
            saved = dict(recorded)
        if closed:
            break
    bounds = {pid: (began, now if gone is None else gone) for pid, (began, gone) in raylets.items()}
    ended = end(recorded | raylet_orphans(bounds, process_table()))
    if ended and not process_alive(driver, None if driver_start == "-" else driver_start):
        print(f"harness.run: the grid driver (pid {driver}) is gone; ended what was left of its local "
              f"Ray: {', '.join(ended)}", file=sys.stderr, flush=True)
    with contextlib.suppress(OSError):
        record.unlink()
    return 0


def start_watchdog(directory: Path = RECORDS) -> None:
    """Start this driver's watchdog (where the host has ``/proc``; a watchdog that cannot start costs
    the clean-up after a SIGKILL, never the run)."""
    if _watchdog[0] is not None or not Path("/proc/self/stat").exists():
        return
    pid = os.getpid()
    start = process_start(pid) or "-"
    earlier = ",".join(str(p) for p in descendants(pid, process_table())) or "-"  # before Ray: not Ray's
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        record = directory / f"driver-{pid}-{start}.json"
        _watchdog[0] = subprocess.Popen(
            [sys.executable, "-m", "harness.local_ray", "--watch", str(record), str(pid), start, earlier],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        _watchdog[0] = None


def stop_watchdog(timeout_s: float = 5.0) -> None:
    """Close the pipe to the watchdog, which ends what is left of the local Ray, and wait for it."""
    process, _watchdog[0] = _watchdog[0], None
    if process is None:
        return
    with contextlib.suppress(OSError):
        process.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout_s)


def _record_of(path: Path) -> tuple[tuple[int, str | None], tuple[int, str | None], dict] | None:
    try:
        record = json.loads(path.read_text())
        (driver, driver_start), (dog, dog_start) = record["driver"], record["watchdog"]
        processes = {int(pid): (str(start), str(name)) for pid, start, name in record["processes"]}
    except (OSError, ValueError, KeyError, TypeError):
        return None

    def started(value: object) -> str | None:
        return None if value in (None, "-") else str(value)

    return (int(driver), started(driver_start)), (int(dog), started(dog_start)), processes


def reap_orphans(directory: Path = RECORDS) -> list[str]:
    """End the processes of the records whose driver and watchdog are both gone, still running as recorded.

    A record that cannot be read is removed only when the driver its name gives is gone, and nothing in it is
    ended. Each line is printed on stderr too.

    Args:
        directory: the folder of the watchdogs' records.

    Returns:
        One line per record that had processes to end, naming them.
    """
    lines = []
    for path in sorted(directory.glob("driver-*.json")):
        record = _record_of(path)
        if record is None:
            fields = path.stem.split("-")
            with contextlib.suppress(ValueError, IndexError, OSError):
                if not process_alive(int(fields[1]), None if fields[2] == "-" else fields[2]):
                    path.unlink()
            continue
        (driver, driver_start), (dog, dog_start), processes = record
        if process_alive(driver, driver_start) or process_alive(dog, dog_start):
            continue  # a driver that runs, or a watchdog that is cleaning up: theirs
        ended = end(processes)
        with contextlib.suppress(OSError):
            path.unlink()
        if ended:
            lines.append(f"ended {len(ended)} process(es) left by the local Ray of an earlier grid driver "
                         f"(pid {driver}, gone): {', '.join(ended)}")
            print(lines[-1], file=sys.stderr, flush=True)
    return lines


def _core_processes() -> list[tuple[str, subprocess.Popen]]:
    """The GCS server and raylet that Ray started for this process (none where it started no local
    Ray), read from Ray's private ``_global_node``: should a release rename it, there are none."""
    try:
        import ray._private.worker as ray_worker
    except ImportError:
        return []
    processes = getattr(getattr(ray_worker, "_global_node", None), "all_processes", None) or {}
    return [(label, info.process) for kind, label in (("gcs_server", "GCS server"), ("raylet", "raylet"))
            for info in list(processes.get(kind, ())) if getattr(info, "process", None) is not None]


def has_local_ray() -> bool:
    """Whether this process started a local Ray that is up (its GCS server and raylet known).

    Returns:
        True where Ray's record of this process's GCS server or raylet is found.
    """
    return bool(_core_processes())


def lost() -> str | None:
    """Why the local Ray of this process is gone (its GCS server or raylet has ended).

    Returns:
        The reason in a few words (which process ended, and its exit code or signal), or None while both run
        or where this process started no local Ray.
    """
    for label, process in _core_processes():
        code = process.poll()
        if code is not None:
            how = f"exit code {code}"
            if code < 0:
                with contextlib.suppress(ValueError):
                    how = f"killed by {signal.Signals(-code).name}"
            return f"its {label} (pid {process.pid}) ended ({how})"
    return None


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--watch":
        before = frozenset(int(p) for p in sys.argv[5].split(",") if p.isdigit())
        sys.exit(watch(Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4], before))
    sys.exit("usage: python -m harness.local_ray --watch RECORD DRIVER_PID DRIVER_START EARLIER_PIDS")
