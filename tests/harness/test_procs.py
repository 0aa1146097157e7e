"""``harness.procs.process_alive``: a running process is alive, an ended one is not, whether or not
its parent has reaped it yet."""

import subprocess
import time

from harness.procs import process_alive, process_start


def test_a_zombie_is_not_alive_and_a_running_process_is() -> None:
    """A child that has exited but is not yet waited for (a zombie: its pid still answers a signal)
    counts as gone; a running one, with its recorded start time, as alive; a reused pid (another start
    time) as another process."""
    running = subprocess.Popen(["sleep", "30"])
    ended = subprocess.Popen(["true"])
    try:
        started = process_start(running.pid)
        assert started is not None and process_alive(running.pid, started)
        assert not process_alive(running.pid, str(int(started) + 1))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # not waited for: a zombie once it has exited
            with open(f"/proc/{ended.pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
            time.sleep(0.01)
        assert not process_alive(ended.pid, None)
    finally:
        running.kill()
        running.wait()
        ended.wait()
    assert not process_alive(ended.pid, None) and not process_alive(running.pid, started)


def test_a_lock_record_names_its_process_and_reads_back() -> None:
    """The record a grid's lock holds (``HOST PID START``) and the older one (``PID`` alone, this
    host's); anything else names no process."""
    import os
    import socket
    from pathlib import Path

    from harness.procs import process_record, record_holder

    ticks = Path(f"/proc/{os.getpid()}/stat").read_text().rsplit(")", 1)[1].split()[19]
    assert process_record(os.getpid()) == f"{socket.gethostname()} {os.getpid()} {ticks}"
    assert record_holder(process_record(os.getpid())) == (socket.gethostname(), os.getpid(), ticks)
    assert record_holder("4242") == (socket.gethostname(), 4242, None)
    assert record_holder("elsewhere 17 -") == ("elsewhere", 17, None)
    assert record_holder("") is None and record_holder("host notapid 1") is None
