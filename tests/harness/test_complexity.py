"""Timing cells of the complexity study: the controlled state, the rows, the store, and a reduced
``--grid complexity`` through the real command line and into the report."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from harness.cell import CellSpec, run_cell
from harness.complexity import (
    MAX_PROPOSAL_S,
    SIZES_D,
    SIZES_Z,
    TimingSpecError,
    complexity_cells,
    estimate_proposal_seconds,
    observations,
    timed_problem,
)
from harness.frames import read_results, read_timings
from harness.grid import resolve_grid
from harness.results import cell_path, check_cell_file, spec_from_dict, spec_hash
from harness.schema import TIMING_SCHEMA
from harness.store import write_cell
from studies.nguyen2021.complexity import METHODS

#: processes of their own (Ray, drivers, servers): one xdist group, one test at a time (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("processes")


def timing(problem: str, algorithm: str, n_obs: int, n_z: int, repeats: int = 2, **options) -> CellSpec:
    return CellSpec.make(problem, algorithm, 0, options={**options, "n_obs": n_obs, "n_z": n_z,
                                                         "repeats": repeats}, kind="timing")


def test_a_bo_spec_keeps_its_identity_and_a_timing_spec_says_its_kind() -> None:
    bo = CellSpec.make("branin-1-1-discrete", "vucb-prob", 3)
    assert "kind" not in json.loads(bo.to_json())  # hashes of BO cells are unchanged
    # the hash of this BO spec before timing cells existed (sha256 of its canonical JSON)
    legacy = ('{"algorithm":"vucb-prob","alpha":null,"iterations":null,"options":[],'
              '"problem":"branin-1-1-discrete","seed":3}')
    import hashlib

    assert spec_hash(bo) == hashlib.sha256(legacy.encode()).hexdigest()[:12]
    t = timing("branin-1-1-discrete", "vucb-prob", 10, 16)
    assert json.loads(t.to_json())["kind"] == "timing"
    assert spec_from_dict(json.loads(t.to_json())) == t and spec_from_dict(json.loads(bo.to_json())) == bo
    with pytest.raises(ValueError, match="kind"):
        CellSpec.make("branin-1-1-discrete", "vucb-prob", 0, kind="nope")


def test_the_state_depends_on_problem_size_and_seed_only() -> None:
    a = observations(timing("branin-1-1-discrete", "vucb-prob", 20, 16))
    b = observations(timing("branin-1-1-discrete", "stableopt", 20, 1024))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert a[0].shape == (20, 2) and a[1].shape == (20, 1)
    c = observations(timing("branin-1-1-discrete", "vucb-prob", 40, 16))
    assert c[0].shape == (40, 2)
    z = observations(timing("branin-1-1-continuous", "vucb-prob-saa", 30, 16))[0][:, 1]
    assert bool(((z >= 0.25) & (z <= 0.75)).all())  # inside the truncated normal's support


def test_dz_sets_the_grid_or_the_samples() -> None:
    problem, options = timed_problem(timing("branin-1-1-discrete", "vucb-prob", 10, 256))
    assert problem.z.points.shape == (256, 1) and options == {}
    assert float(problem.z.masses.sum()) == pytest.approx(1.0)
    problem, _ = timed_problem(timing("hartmann-1-2-discrete", "vucb-prob", 10, 64))
    assert problem.z.points.shape == (64, 2)  # 8 x 8
    with pytest.raises(TimingSpecError, match="2-th power"):
        timed_problem(timing("hartmann-1-2-discrete", "vucb-prob", 10, 32))
    _, options = timed_problem(timing("branin-1-1-continuous", "vucb-prob-saa", 10, 64))
    assert options == {"n_samples": 64}
    _, options = timed_problem(timing("branin-1-1-continuous", "rhokg-apx", 10, 64, maxiter=5))
    assert options == {"num_w_samples": 64, "maxiter": 5}
    with pytest.raises(TimingSpecError, match="n_z"):
        timed_problem(CellSpec.make("branin-1-1-discrete", "vucb-prob", 0, options={"n_obs": 3},
                                    kind="timing"))


def test_a_timing_cell_times_fits_and_proposals_on_one_thread() -> None:
    threads = torch.get_num_threads()
    result = run_cell(timing("branin-1-1-discrete", "vucb-prob", 12, 16, repeats=3))
    assert torch.get_num_threads() == threads  # restored
    rows = result.rows
    assert [(r["what"], r["repeat"]) for r in rows] == [
        (what, repeat) for what in ("fit", "acquisition", "evaluation") for repeat in (1, 2, 3)]
    assert all(r["threads"] == 1 and r["n_obs"] == 12 and r["n_z"] == 16 and r["z_kind"] == "discrete"
               for r in rows)
    assert all(r["seconds"] > 0 and r["cpu_seconds"] > 0 for r in rows)
    assert result.metadata["kind"] == "timing"


def test_timing_files_are_kept_apart_from_bo_results(tmp_path: Path) -> None:
    spec = timing("branin-1-1-discrete", "stableopt", 10, 16)
    write_cell(tmp_path, spec, run_cell(spec))
    path = cell_path(tmp_path, spec)
    assert check_cell_file(path) is None
    assert read_results(tmp_path).empty
    frame = read_timings(tmp_path)
    assert len(frame) == 6 and set(frame["what"]) == {"fit", "acquisition", "evaluation"}
    assert set(frame["options"]) == {"{}"}  # the state is not an algorithm option
    # a file with timing columns whose spec says it is a BO cell is refused
    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[b"varbo"])
    bo_spec = CellSpec.make("branin-1-1-discrete", "stableopt", 0)
    meta["spec"] = json.loads(bo_spec.to_json())
    forged = cell_path(tmp_path, bo_spec)
    forged.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table.replace_schema_metadata({"varbo": json.dumps(meta)}), forged)
    assert "another kind" in check_cell_file(forged)
    assert TIMING_SCHEMA.names == [f.name for f in pa.schema(table.schema).remove_metadata()]


def test_the_grid_covers_every_feasible_size_and_says_where_it_stops() -> None:
    cells = resolve_grid("complexity").cells
    assert all(c.kind == "timing" for c in cells)
    methods = {(c.problem, c.algorithm) for c in cells}
    assert methods == {("branin-1-1-discrete", "vucb-prob"), ("branin-1-1-discrete", "stableopt"),
                       ("branin-1-1-discrete", "rhokg-apx"), ("branin-1-1-continuous", "vucb-prob"),
                       ("branin-1-1-continuous", "vucb-prob-saa")}
    for problem, algorithm in methods:
        sizes = {(dict(c.options)["n_obs"], dict(c.options)["n_z"]) for c in cells
                 if (c.problem, c.algorithm) == (problem, algorithm)}
        expected = {(d, z) for d in SIZES_D for z in SIZES_Z
                    if estimate_proposal_seconds(problem, algorithm, d, z) <= MAX_PROPOSAL_S}
        assert sizes == expected and (10, 16) in sizes
    vucb = {(dict(c.options)["n_obs"], dict(c.options)["n_z"]) for c in cells
            if (c.problem, c.algorithm) == ("branin-1-1-discrete", "vucb-prob")}
    assert len(vucb) == len(SIZES_D) * len(SIZES_Z)  # V-UCB is timed everywhere
    assert all(dict(c.options)["repeats"] == 5 for c in cells)
    assert len(complexity_cells(METHODS, sizes_d=(10,), sizes_z=(16,), repeats=2)) == 5
    assert resolve_grid("complexity").study == "nguyen2021"  # the paper study's: its methods


@pytest.mark.slow
@pytest.mark.xdist_group("untimed")  # with the module's: a unit of its own (it times nothing)
def test_reduced_complexity_grid_through_the_command_line_and_the_report(tmp_path: Path) -> None:
    out, report = tmp_path / "complexity", tmp_path / "report"
    # |D| in {10, 20} x |Dz| in {16, 64}, V-UCB Prob and StableOpt on a discrete Z
    pattern = "branin-1-1-discrete/[vs][ut]*/seed0 n_obs=[12]0 n_z=[16][64] repeats=5"
    done = subprocess.run([sys.executable, "-m", "harness.run", "--grid", "complexity", "--only", pattern,
                           "--out", str(out), "--num-cpus", "2", "--no-progress"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    frame = read_timings(out)
    assert sorted(frame.groupby(["algorithm", "n_obs", "n_z"]).size().index) == sorted(
        (a, d, z) for a in ("stableopt", "vucb-prob") for d in (10, 20) for z in (16, 64))
    assert (frame.groupby(["algorithm", "n_obs", "n_z", "what"]).size() == 5).all()
    assert set(frame["what"]) == {"fit", "acquisition", "evaluation"}
    made = subprocess.run([sys.executable, "-m", "analysis.report", str(out), "--out", str(report)],
                          capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr[-2000:]
    assert (report / "fig_complexity.png").stat().st_size > 0
    assert (report / "fig_complexity_evaluation.png").stat().st_size > 0
    import pandas as pd

    slopes = pd.read_csv(report / "complexity_slopes.csv")
    # per method: against |D| at each |Dz| and against |Dz| at each |D|: 4 lines, gp-fit too
    assert set(slopes["method"]) == {"vucb-prob", "stableopt", "gp-fit", "vucb-prob: one evaluation",
                                     "stableopt: one evaluation"}
    assert (slopes.groupby("method").size() == 4).all()
    assert slopes["slope"].map(math.isfinite).all()
    assert "Computational complexity" in (report / "report.md").read_text()


def test_lnso_has_no_acquisition_function_to_time() -> None:
    rows = run_cell(timing("branin-1-1-continuous", "vucb-prob", 10, 16, repeats=1,
                           train_steps=5, retrain_steps=2, x_steps=3, var_steps=5, lv_steps=5)).rows
    assert {r["what"] for r in rows} == {"fit", "acquisition"}
