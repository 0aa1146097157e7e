"""Crash recovery on a real multi-node Ray cluster on this machine (a head and two worker nodes,
each its own raylet process, via ray.cluster_utils.Cluster): a worker node killed mid-grid (cells
rerun elsewhere; a long cell resumes from its checkpoint), and the driver killed mid-grid, then
rerun against the same cluster."""

import contextlib
import io
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch

from harness.cell import CellSpec, run_cell
from harness.frames import read_results
from harness.kernels import PINNED
from harness.ray_runner import run_cells
from harness.ray_session import start_ray
from harness.results import cell_files, cell_path, result_files
from harness.schema import ROW_SCHEMA
from harness.store import read_checkpoint
from tests.harness.faults import slow_cell, slow_iterations
from tests.harness.layout import TIMINGS

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

CELLS = [CellSpec.make(p, "random", s, 2) for p in ("branin-1-1-discrete", "goldstein-1-1-discrete")
         for s in range(4)]

#: minutes of multi-node Ray: run by `pytest -m slow` (the second step of .ci/run)
#: and processes of their own: one xdist group, one test at a time (tests/conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("processes")]


@contextlib.contextmanager
def unpinned_nodes():
    """Ray nodes started meanwhile get no pin from this (pinned) test process: their workers are
    pinned only if the driver's runtime environment pins them (:mod:`harness.kernels`)."""
    keys = [*PINNED, "NPY_DISABLE_CPU_FEATURES"]
    saved = {k: os.environ.pop(k) for k in keys if k in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


@pytest.fixture(scope="module")
def head():
    """The head node, shared by the tests of this module (it starts in seconds, not instantly)."""
    ray.shutdown()  # an earlier test may have left this process connected to another Ray
    # the head advertises no CPU, as on a real cluster: every cell runs on a worker node
    # a dead node is declared dead after 3 missed health checks 0.5 s apart (Ray's defaults: 5 and
    # 3 s, whose detection delay would dominate these tests)
    with unpinned_nodes():
        c = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 0, "include_dashboard": False,
            "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 3}})
    start_ray(c.address, None)  # as the grid command joins a cluster (quiet, Ray's messages condensed)
    yield c
    ray.shutdown()
    c.shutdown()


@pytest.fixture
def cluster(head):
    """Two fresh worker nodes of one CPU each (a test may kill one); removed afterwards."""
    with unpinned_nodes():
        nodes = [head.add_node(num_cpus=1) for _ in range(2)]
    head.wait_for_nodes()
    yield head, nodes
    for node in nodes:
        if node in head.worker_nodes:
            head.remove_node(node)
    head.wait_for_nodes()


def test_a_worker_node_killed_mid_grid_loses_no_cell_and_duplicates_none(
        cluster, tmp_path: Path) -> None:
    c, nodes = cluster
    out = tmp_path / "out"
    killed: dict = {}

    def kill_first_node_once_a_cell_is_done() -> None:
        deadline = time.monotonic() + 120
        while not result_files(out) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # the next cells are running now, one of them on this node
        killed["files_before"] = len(result_files(out))
        killed["at"] = time.monotonic()
        c.remove_node(nodes[0], allow_graceful=False)  # its raylet and workers die at once

    killer = threading.Thread(target=kill_first_node_once_a_cell_is_done)
    killer.start()
    start = time.monotonic()
    outcome = run_cells(CELLS, out, cell_fn=slow_cell, progress=False)
    killer.join()
    assert "at" in killed, "the node was never killed"
    assert killed["files_before"] < len(CELLS), "the grid finished before the kill"
    # every cell exactly once, none failed: Ray reran the lost cells on the surviving node
    assert not outcome.failed and not outcome.interrupted
    files = result_files(out)
    assert files == sorted(cell_path(out, s) for s in CELLS)
    assert Counter(read_results(out)[["problem", "seed"]].itertuples(index=False)) == Counter(
        {(s.problem, s.seed): 3 for s in CELLS})
    assert all(pq.read_table(p).num_rows == 3 for p in files)
    assert not list(out.rglob(".*")) and not (out / "_failed").exists()
    print(f"node killed after {killed['files_before']} of {len(CELLS)} cells, "
          f"{killed['at'] - start:.1f} s in; grid done in {time.monotonic() - start:.1f} s")


KILL_GRID = """seeds = 4
iterations = 2
[[cells]]
problems = ["branin-1-1-discrete", "goldstein-1-1-discrete"]
algorithms = ["random", "vucb-prob"]
"""


def test_the_driver_killed_then_rerun_recomputes_no_finished_cell(cluster, tmp_path: Path) -> None:
    c, _ = cluster
    grid_file = tmp_path / "kill.toml"
    grid_file.write_text(KILL_GRID)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "harness.run", "--grid", str(grid_file), "--out", str(out),
               "--address", c.address, "--no-progress"]
    driver = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while len(result_files(out)) < 3 and time.monotonic() < deadline and driver.poll() is None:
        time.sleep(0.1)
    assert driver.poll() is None, f"the grid ended before the kill: {driver.stderr.read()[-2000:]}"
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    finished = {p: p.stat().st_mtime_ns for p in result_files(out)}
    assert 3 <= len(finished) < 16
    rerun = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert f"{len(finished)} done, {16 - len(finished)} to run" in rerun.stdout
    assert f"joined the Ray cluster at {c.address}" in rerun.stdout and "Ray ready in" not in rerun.stdout
    files = result_files(out)
    assert len(files) == 16 == len({(p.parent.parent.name, p.parent.name, p.name) for p in files})
    assert all(p.stat().st_mtime_ns == t for p, t in finished.items())  # none recomputed
    assert not list(out.rglob(".*")) and not (out / "_failed").exists()
    # the nodes started without the pin: the driver's runtime environment pinned their workers
    kernels = {(m["provenance"]["kernels"], m["provenance"]["torch_cpu"]) for _, m in cell_files(out)[0]}
    assert kernels == {("pinned", "AVX2")}


def test_a_cell_on_a_killed_node_resumes_from_its_last_checkpoint(cluster, tmp_path: Path) -> None:
    c, nodes = cluster
    out = tmp_path / "out"
    specs = [CellSpec.make("branin-1-1-discrete", "vucb-prob", s, 12) for s in (0, 1)]
    seen: dict = {}

    def kill_when_both_have_checkpoints() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            data = [read_checkpoint(out, s) for s in specs]
            if all(d is not None for d in data):
                iterations = [torch.load(io.BytesIO(d), weights_only=True)["rows"][-1]["iteration"]
                              for d in data]
                if min(iterations) >= 3:
                    seen["checkpointed"] = iterations
                    c.remove_node(nodes[0], allow_graceful=False)
                    seen["at"] = time.monotonic()
                    return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_when_both_have_checkpoints)
    killer.start()
    start = time.monotonic()
    outcome = run_cells(specs, out, cell_fn=slow_iterations, progress=False)
    killer.join()
    assert "at" in seen, "the node was never killed"
    assert not outcome.failed and len(outcome.done) == 2
    # the cell that was on the killed node resumed after a checkpointed iteration, not from 0
    assert len(outcome.resumed) == 1
    (spec, resumed_at), = outcome.resumed.items()
    assert resumed_at >= 3
    for s in specs:  # the same rows as an uninterrupted run, timings aside
        stored = [{k: v for k, v in r.items() if k not in TIMINGS}
                  for r in pq.read_table(cell_path(out, s)).to_pylist()]
        direct = [{k: r.get(k) for k in ROW_SCHEMA.names if k not in TIMINGS} for r in run_cell(s).rows]
        assert stored == direct
    assert read_checkpoint(out, specs[0]) is None and read_checkpoint(out, specs[1]) is None
    print(f"killed with checkpoints at iterations {seen['checkpointed']}; {spec.seed} resumed after "
          f"iteration {resumed_at} of 12; grid done {time.monotonic() - start:.1f} s after start")


# cells of at least 20 s whatever the load (a V-UCB cell of 80 iterations took 10 s on a quiet
# machine and was done, its checkpoint removed, before both cells had checkpointed); the workers
# import the plug-in from the driver's working directory, the repository
LONG_GRID = """seeds = 2
iterations = 100
[[cells]]
problems = ["tests.plugins.toy_plugin:toy_problem"]
algorithms = ["tests.plugins.toy_plugin:Slow"]
"""


def test_a_node_death_is_one_line_per_message_not_rays_state_dump(cluster, tmp_path: Path) -> None:
    """After a node death the raylet pushes the driver its last log lines and ``[state-dump]``
    (about 45 lines); the grid command prints each such message as one ``ray:`` line, once."""
    c, nodes = cluster
    grid_file = tmp_path / "long.toml"
    grid_file.write_text(LONG_GRID)
    out = tmp_path / "out"
    driver = subprocess.Popen([sys.executable, "-m", "harness.run", "--grid", str(grid_file), "--out",
                               str(out), "--address", c.address, "--no-progress"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    # both cells run, one on each node, and have checkpointed: with only one checkpoint the other
    # cell may still be waiting for its worker to start, and Ray then moves it to the live node
    # without a failure to retry (seen in CI on a loaded 2-core machine)
    while len(list(out.glob("_checkpoints/**/*.ckpt"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(list(out.glob("_checkpoints/**/*.ckpt"))) == 2, "the two cells never both checkpointed"
    assert driver.poll() is None, "the grid ended before the kill"
    c.remove_node(nodes[0], allow_graceful=False)
    stdout, stderr = driver.communicate(timeout=300)
    assert driver.returncode == 0, stderr[-2000:]
    assert "retrying tests.plugins.toy_plugin:toy_problem/tests.plugins.toy_plugin:Slow/seed" in stderr
    text = stdout + stderr
    assert "[state-dump]" not in text and "(raylet)" not in text
    ray_lines = [line for line in text.splitlines() if line.startswith("ray: ")]
    assert ray_lines, f"no message from Ray reached the driver:\n{text}"
    assert len(ray_lines) == len(set(ray_lines)) and all(len(line) < 260 for line in ray_lines)
    assert len(text.splitlines()) <= 8 + len(ray_lines), text
    print(text)
