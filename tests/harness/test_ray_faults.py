"""Faults of the local Ray a grid driver starts, and signals at any moment, with real processes: the
GCS or raylet killed mid-grid (noticed within 10 s: one line, exit 1, nothing left running), SIGTERM
while the driver imports, starts or shuts down (exit 143, one "interrupted" line, no traceback), the
driver killed with SIGKILL (its Ray's processes all gone soon after), and the watchdog and reaper of
:mod:`harness.local_ray` on stand-in processes (a live driver's processes are never touched).

Every driver here runs in a session of its own (``start_new_session``), so that its processes, Ray's
included, are told from any other on the machine by their session id; a test ends only those, and the
watchdog its driver started (found by the driver's pid on its command line)."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.local_ray import RECORDS, end, process_table, raylet_orphans, reap_orphans
from harness.procs import process_start

#: processes of their own (Ray, drivers, servers): one xdist group, one test at a time (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("processes")

ROOT = Path(__file__).resolve().parents[2]

# two cells of 20 s or more whatever the load (0.2 s a proposal), mostly asleep: a grid that is
# surely running when the fault comes, at little CPU
LONG_GRID = """seeds = 2
iterations = 100
[[cells]]
problems = ["tests.plugins.toy_plugin:toy_problem"]
algorithms = ["tests.plugins.toy_plugin:Slow"]
"""
ONE_CELL = ["--grid", "smoke", "--only", "branin-1-1-discrete/random/seed0 T=*"]


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the command name (state first), or None."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def processes_of(driver_pid: int) -> dict[int, str]:
    """The running processes of the run whose driver (a session leader) had ``driver_pid``: those of
    its session, and its watchdog. Zombies have ended."""
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        fields = _stat(int(entry.name))
        if fields is None or fields[0] in ("Z", "X"):
            continue
        try:
            argv = Path(f"/proc/{entry.name}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        watchdog = b"harness.local_ray" in argv and str(driver_pid).encode() in argv
        if int(fields[3]) == driver_pid or watchdog:
            found[int(entry.name)] = _comm(int(entry.name))
    return found


def end_run(driver_pid: int) -> None:
    """SIGKILL what is left of this test's run (its session and its watchdog): nothing else."""
    for pid in processes_of(driver_pid):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def nothing_left_within(driver_pid: int, seconds: float) -> dict[int, str]:
    """Wait until no process of the run is left, up to ``seconds``; what is left then."""
    deadline = time.monotonic() + seconds
    while (left := processes_of(driver_pid)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


class Driver:
    """``python -m harness.run ARGS --no-progress`` in its own session, its lines read as they come
    (with the second each came at)."""

    def __init__(self, *args: str) -> None:
        self.start = time.monotonic()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "harness.run", *args, "--no-progress"], cwd=ROOT, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        self.pid = self.process.pid
        self.lines: list[tuple[float, str]] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    def wait_for_line(self, prefix: str, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while not any(line.startswith(prefix) for _, line in self.lines):
            assert self.process.poll() is None, f"the driver ended before {prefix!r}:\n{self.text()}"
            assert time.monotonic() < deadline, f"no line {prefix!r} in {timeout:.0f} s:\n{self.text()}"
            time.sleep(0.02)

    def wait(self, timeout: float) -> int:
        """The exit code; fails if the driver runs on after ``timeout`` seconds."""
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the driver still runs {timeout:.0f} s later:\n{self.text()}") from None
        self.reader.join(10)
        return code

    def text(self) -> str:
        return "\n".join(line for _, line in self.lines)

    def ray_process(self, name: str) -> int:
        """The pid of the driver's own ``gcs_server`` or ``raylet`` (its child)."""
        for pid, comm in processes_of(self.pid).items():
            fields = _stat(pid)
            if comm == name and fields is not None and int(fields[1]) == self.pid:
                return pid
        raise AssertionError(f"no {name} among the driver's processes {processes_of(self.pid)}")


@pytest.fixture
def driver_cleanup():
    """Drivers started by a test; whatever is left of their runs is killed afterwards."""
    drivers: list[Driver] = []
    yield drivers
    for driver in drivers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(driver.pid, signal.SIGKILL)
        end_run(driver.pid)
        driver.process.wait(10)


def assert_one_line_no_traceback(text: str, needle: str) -> None:
    assert "Traceback" not in text and "Exception ignored" not in text, text
    assert "SIGTERM received" not in text and "logging.cc" not in text, text  # Ray's C++ dump
    assert sum(needle in line for line in text.splitlines()) == 1, text


@pytest.mark.parametrize("victim", ["raylet", "gcs_server"])
def test_a_dead_local_ray_is_one_line_exit_1_within_10_s_and_nothing_left(
        tmp_path: Path, victim: str, driver_cleanup: list) -> None:
    """Before: a dead raylet left the driver in ``ray.get`` forever; a dead GCS, in
    ``ray.cluster_resources()`` for a minute, deaf to SIGTERM, and its agents and workers on."""
    grid = tmp_path / "long.toml"
    grid.write_text(LONG_GRID)
    out = tmp_path / "out"
    driver = Driver("--grid", str(grid), "--out", str(out), "--num-cpus", "1")
    driver_cleanup.append(driver)
    driver.wait_for_line("Ray ready")
    time.sleep(3)  # the grid's loop runs, the first cell with it
    assert driver.process.poll() is None, driver.text()
    killed_at = time.monotonic()
    os.kill(driver.ray_process(victim), signal.SIGKILL)
    code = driver.wait(10)
    took = time.monotonic() - killed_at
    text = driver.text()
    assert code == 1, text
    assert_one_line_no_traceback(text, "the local Ray stopped")
    label = {"raylet": "raylet", "gcs_server": "GCS server"}[victim]
    said = [line for at, line in driver.lines if "the local Ray stopped" in line]
    assert said[0].startswith(f"harness.run: error: the local Ray stopped: its {label} (pid ") and (
        "(killed by SIGKILL)" in said[0])
    assert "the same command resumes" in text.splitlines()[-1]
    assert not list(out.rglob(".*")) and not (out / "_running.lock").exists()
    left = nothing_left_within(driver.pid, 20)
    assert not left, f"processes of the run left 20 s after: {left}"
    print(f"{victim} killed: the driver exited {took:.1f} s later\n{text}")


@pytest.mark.parametrize("delay", [0.5, 2.0], ids=["0.5s", "2s"])
def test_sigterm_early_is_exit_143_and_one_line(tmp_path: Path, delay: float, driver_cleanup: list) -> None:
    """SIGTERM while the driver imports torch and Ray. Before: killed by the signal (-15) or exit 15."""
    driver = Driver(*ONE_CELL, "--out", str(tmp_path / "out"))
    driver_cleanup.append(driver)
    time.sleep(max(0.0, delay - (time.monotonic() - driver.start)))
    assert driver.process.poll() is None
    os.kill(driver.pid, signal.SIGTERM)
    code = driver.wait(10)
    assert code == 143, driver.text()
    assert_one_line_no_traceback(driver.text(), "interrupted")
    assert not nothing_left_within(driver.pid, 10)


def test_sigterm_during_the_shutdown_is_exit_143_and_one_line(tmp_path: Path, driver_cleanup: list) -> None:
    """SIGTERM once the grid is done, while Ray shuts down. Before: "Exception ignored in atexit
    callback ... KeyboardInterrupt", or killed by the signal."""
    out = tmp_path / "out"
    driver = Driver(*ONE_CELL, "--out", str(out))
    driver_cleanup.append(driver)
    driver.wait_for_line("grid smoke: ")  # the last line before the shutdown
    os.kill(driver.pid, signal.SIGTERM)
    code = driver.wait(10)
    text = driver.text()
    assert code == 143, text
    assert_one_line_no_traceback(text, "interrupted")
    assert len(list(out.rglob("*.parquet"))) == 1  # the cell was written before
    assert not nothing_left_within(driver.pid, 10)


def test_a_driver_killed_with_sigkill_leaves_no_ray_process(tmp_path: Path, driver_cleanup: list) -> None:
    """Before: the dashboard and runtime-env agents lived on for minutes."""
    grid = tmp_path / "long.toml"
    grid.write_text(LONG_GRID)
    driver = Driver("--grid", str(grid), "--out", str(tmp_path / "out"), "--num-cpus", "1")
    driver_cleanup.append(driver)
    driver.wait_for_line("Ray ready")
    time.sleep(3)
    before = processes_of(driver.pid)
    assert {"gcs_server", "raylet"} <= set(before.values()), before
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait(10)
    left = nothing_left_within(driver.pid, 20)
    assert not left, f"of {before}, still running 20 s after the SIGKILL: {left}"
    # the watchdog names what it ended, if anything was left once the kernel ended Ray's own children
    named = [line for _, line in driver.lines if "is gone; ended what was left of its local Ray" in line]
    assert len(named) <= 1, driver.text()


# -- the watchdog and the reaper on stand-ins: no Ray --------------------------------------------------

FAKE_DRIVER = """
import subprocess, sys, time
from harness.local_ray import start_watchdog

start_watchdog()
child = subprocess.Popen(["sleep", "300"])  # stands for Ray's processes (started after the watchdog)
print(child.pid, flush=True)
time.sleep(300)
"""


def _fake_driver() -> tuple[subprocess.Popen, int]:
    driver = subprocess.Popen([sys.executable, "-c", FAKE_DRIVER], cwd=ROOT, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    return driver, int(driver.stdout.readline())


def _recorded(driver: int) -> set[int]:
    """The processes the watchdog of ``driver`` has recorded so far (its record file's)."""
    pids: set[int] = set()
    for path in RECORDS.glob(f"driver-{driver}-*.json"):
        with contextlib.suppress(OSError, ValueError):
            pids |= {int(entry[0]) for entry in json.loads(path.read_text())["processes"]}
    return pids


def _running(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def test_the_watchdog_ends_a_killed_drivers_processes_and_no_others() -> None:
    killed, killed_child = _fake_driver()
    alive, alive_child = _fake_driver()
    try:
        # both watchdogs have recorded their driver's process (they look every second; on a loaded
        # host a watchdog's start alone took more than the 1.5 s this test once slept)
        for driver, child in ((killed, killed_child), (alive, alive_child)):
            deadline = time.monotonic() + 30
            while child not in _recorded(driver.pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert child in _recorded(driver.pid), "a watchdog never recorded its driver's process"
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait()
        deadline = time.monotonic() + 10
        while _running(killed_child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _running(killed_child), "the killed driver's process is still running"
        stderr = killed.stderr.read()
        assert f"the grid driver (pid {killed.pid}) is gone; ended what was left of its local Ray: sleep " \
               f"(pid {killed_child})" in stderr, stderr
        assert not nothing_left_within(killed.pid, 5)  # its watchdog has exited too
        # the live driver's process, and its watchdog, are untouched
        assert _running(alive_child) and alive.poll() is None
        assert len(processes_of(alive.pid)) == 3  # the driver, its sleep, its watchdog
    finally:
        for driver in (killed, alive):
            with contextlib.suppress(ProcessLookupError):
                os.kill(driver.pid, signal.SIGKILL)
            driver.wait()
            end_run(driver.pid)


def _record(directory: Path, driver: tuple[int, str], watchdog: tuple[int, str],
            processes: list[subprocess.Popen]) -> Path:
    path = directory / f"driver-{driver[0]}-{driver[1]}.json"
    path.write_text(json.dumps({"driver": list(driver), "watchdog": list(watchdog), "processes": [
        [p.pid, process_start(p.pid), "sleep"] for p in processes]}))
    return path


def _gone_process() -> tuple[int, str]:
    """The pid and start time of a process that has ended."""
    process = subprocess.Popen(["sleep", "0"])
    start = process_start(process.pid)
    process.wait()
    return process.pid, start


def test_the_reaper_ends_only_what_a_gone_driver_and_watchdog_recorded(tmp_path: Path, capsys) -> None:
    sleeps = [subprocess.Popen(["sleep", "300"]) for _ in range(4)]
    try:
        me = (os.getpid(), process_start(os.getpid()))
        gone, gone_too = _gone_process(), _gone_process()
        orphaned = _record(tmp_path, gone, gone_too, sleeps[:1])
        (tmp_path / "sub").mkdir()
        live_driver = _record(tmp_path / "sub", me, gone_too, sleeps[1:2])
        live_watchdog = _record(tmp_path / "sub", gone, me, sleeps[2:3])
        # a pid that now names another process (another start time) is not the recorded one
        reused = _record(tmp_path / "sub", _gone_process(), gone_too, [])
        reused.write_text(reused.read_text().replace('"processes": []',
                                                     f'"processes": [[{sleeps[3].pid}, "1", "sleep"]]'))
        damaged = tmp_path / f"driver-{gone[0]}-{gone[1]}x.json"
        damaged.write_text("{not json")

        lines = reap_orphans(tmp_path)
        assert lines == [f"ended 1 process(es) left by the local Ray of an earlier grid driver "
                         f"(pid {gone[0]}, gone): sleep (pid {sleeps[0].pid})"]
        assert capsys.readouterr().err.splitlines() == lines
        assert sleeps[0].wait(5) == -signal.SIGKILL
        assert not orphaned.exists() and not damaged.exists()

        assert reap_orphans(tmp_path / "sub") == []
        assert all(p.poll() is None for p in sleeps[1:])  # a live driver's, a live watchdog's, a reused pid
        assert live_driver.exists() and live_watchdog.exists()
    finally:
        for process in sleeps:
            process.kill()
            process.wait()


def test_end_stops_and_kills_a_process_and_the_children_it_started() -> None:
    parent = subprocess.Popen(["sh", "-c", "sleep 300 & wait"], start_new_session=True)
    try:
        def children() -> list[int]:
            return [int(p) for p in os.listdir("/proc")
                    if p.isdigit() and (_stat(int(p)) or ["", "0"])[1] == str(parent.pid)]

        deadline = time.monotonic() + 5
        while not children() and time.monotonic() < deadline:
            time.sleep(0.05)
        [child] = children()
        ended = end({parent.pid: (process_start(parent.pid), "sh")})
        assert ended == [f"sh (pid {parent.pid})", f"sleep (pid {child})"]
        assert parent.wait(5) == -signal.SIGKILL
        deadline = time.monotonic() + 5
        while _running(child) and time.monotonic() < deadline:  # reaped by whoever adopted it
            time.sleep(0.05)
        assert not _running(child)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(parent.pid, signal.SIGKILL)
        parent.wait()


def test_a_dead_raylets_orphans_are_told_by_their_environment_and_start() -> None:
    """A worker the raylet started just before it died is reparented before the watchdog saw it below
    the driver: it is found by ``RAY_RAYLET_PID`` in its environment and its start while that raylet
    ran; a process naming another raylet, or started after, is not."""
    raylet = subprocess.Popen(["sleep", "300"])  # stands for a raylet
    time.sleep(0.1)  # some clock ticks later
    ours = subprocess.Popen(["sleep", "300"], env={**os.environ, "RAY_RAYLET_PID": str(raylet.pid)})
    other = subprocess.Popen(["sleep", "300"], env={**os.environ, "RAY_RAYLET_PID": str(os.getpid())})
    try:
        began, now = int(process_start(raylet.pid)), int(process_start(ours.pid)) + 1000
        found = raylet_orphans({raylet.pid: (began, now)}, process_table())
        assert ours.pid in found and other.pid not in found and raylet.pid not in found
        assert found[ours.pid] == (process_start(ours.pid), "sleep")
        gone_before = int(process_start(ours.pid)) - 1  # ours started after the raylet was gone: not its
        assert raylet_orphans({raylet.pid: (began, gone_before)}, process_table()) == {}
    finally:
        for process in (raylet, ours, other):
            process.kill()
            process.wait()
