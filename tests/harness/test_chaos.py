"""The chaos run (``benchmarks/chaos.py``) in CI: one round against a real grid and its local Ray, the
results folder read-only for a moment at a random time (the kind whose timing only a real run has:
cells that end in the window fail, the driver must exit 1 and its resume rerun them), resumed to its
end. No cell may be lost, duplicated or differ from an undisturbed run of the grid, no driver may
hang or leave a process of its Ray behind, and every exit code must tell the truth; and the chaos
run itself keeps working.

Every kind has a test of its own, exact, with its exit codes and rows: a flipped bit, swapped files
and a truncated file during a run (``test_exit_codes.py``, without Ray), a cell file that cannot be
written (``test_grid_run.py``), the driver's signals (``test_grid_process.py``: Ctrl-C, SIGTERM,
SIGKILL mid-grid then resumed; ``test_ray_faults.py``), the raylet and GCS kills
(``test_ray_faults.py``), a node's raylet and workers killed at once, its cell resubmitted from its
last checkpoint (``test_cluster_recovery.py``), the full disk (``test_storage_faults.py``), the flaky
store (``test_flaky_store.py``) and the damaged pack (``test_pack.py``, ``test_verify.py``). All
thirteen kinds at random moments are the benchmark's (``python benchmarks/chaos.py --rounds 13
--seed 0 --seeds 1 --iterations 30``, about 17 minutes): CI ran them all until its run passed 30
minutes (984 s of its 2185, 2026-11-28, docs/how-to/tests.md)."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

# Not in the "processes" xdist group of the other tests that start drivers (tests/conftest.py): its
# drivers only signal their own processes (session and start time checked), so it runs beside that
# group rather than after it.

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "chaos.py"
#: The kinds of fault CI plays against a running grid (the module docstring)
CI_KINDS = ("readonly",)


def chaos_module():
    """``benchmarks/chaos.py`` as a module (``benchmarks`` is no package): its kinds of fault."""
    spec = importlib.util.spec_from_file_location("chaos", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    # dataclasses resolve string annotations through sys.modules[cls.__module__]: register first
    sys.modules.setdefault("chaos", module)
    spec.loader.exec_module(sys.modules["chaos"])
    return sys.modules["chaos"]


@pytest.mark.slow
def test_random_faults_lose_nothing_and_every_exit_code_tells_the_truth(tmp_path: Path) -> None:
    """Each of :data:`CI_KINDS` once, at a random moment, judged cell by cell against an undisturbed
    run. Slow (about two minutes): the undisturbed run and each round start a driver and a local Ray
    (the faulted run and its resume), and no cheaper set-up has a real grid's files change under it."""
    chaos = chaos_module()
    assert set(CI_KINDS) < set(chaos.KINDS)
    report = tmp_path / "report.json"
    # one seed of each (problem, algorithm): 6 cells of 30 iterations (several seconds each, with a
    # checkpoint a second), a quarter of the script's default grid, so that a fault lands on cell
    # files and checkpoints while the grid writes them. A process of a run still alive 10 s after its
    # driver ended is a stray (the script's default wait is 20 s, for the kinds that kill a driver
    # and leave its processes to the watchdog; after these kinds every driver ends by itself, its
    # Ray shut down before it exits): 80 s of the test's waits saved
    done = subprocess.run([sys.executable, str(SCRIPT), "--rounds", str(len(CI_KINDS)), "--seed", "0",
                           "--kinds", ",".join(CI_KINDS), "--seeds", "1", "--iterations", "30",
                           "--stray-wait-s", "10", "--work", str(tmp_path / "work"), "--report", str(report)],
                          cwd=ROOT, capture_output=True, text=True, timeout=len(CI_KINDS) * 600 + 1800)
    print(done.stdout)
    assert report.is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    rounds = json.loads(report.read_text())["rounds"]
    assert sorted(r["kind"] for r in rounds) == sorted(CI_KINDS), "a kind of fault was not tried once"
    for record in rounds:
        line = chaos.round_line(record)
        for count in ("lost", "duplicated", "differing", "unreadable", "strays", "resume_strays",
                      "leftovers"):
            assert record[count] == [], line
        assert not record["hang"] and not record["resume_hang"], line
        assert record["tracebacks"] == 0 and record["resume_tracebacks"] == 0, line  # one line, always
        assert record["truthful"], f"exit {record['exit']}, expected {record['expected']}: {line}"
        assert record["resume_exit"] == 0 and record["resume_truthful"], line
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
