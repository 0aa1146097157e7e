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
