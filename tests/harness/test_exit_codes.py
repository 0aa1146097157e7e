"""Exit codes of a grid run tell the truth, counted from what happened as well as from the files:
without Ray (its start and the task loop replaced), so that each path is exact and fast."""

from pathlib import Path

import pytest

import harness.ray_runner as ray_runner
from harness.grid_cli import main
from harness.ray_runner import Outcome

ONLY = "branin-1-1-discrete/random/seed0 T=*"


@pytest.fixture
def no_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ray_runner, "start_ray", lambda address, num_cpus: 0.0)
    monkeypatch.setattr("harness.grid_cli._cpus_used", lambda: 2)


def test_a_cell_that_failed_without_a_record_makes_exit_1(no_ray, monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path, capsys) -> None:
    """A read-only folder refuses the cell and its failure record alike: on disk the cell is merely
    missing, and the exit code used to be counted from the disk (0)."""
    def failed_unrecorded(cells, out, *args, **kwargs) -> Outcome:
        return Outcome(failed=list(cells))  # nothing written, no record

    monkeypatch.setattr(ray_runner, "run_cells", failed_unrecorded)
    code = main(["--grid", "smoke", "--only", ONLY, "--out", str(tmp_path), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "1 cell(s) of this run are neither written nor recorded as failed" in out


def test_a_run_that_writes_nothing_and_reports_nothing_is_not_a_success(
        no_ray, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys) -> None:
    monkeypatch.setattr(ray_runner, "run_cells", lambda cells, out, *a, **k: Outcome())
    assert main(["--grid", "smoke", "--only", ONLY, "--out", str(tmp_path), "--no-progress"]) == 1


def test_a_local_ray_that_cannot_start_for_any_reason_is_one_line_and_exit_1(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys) -> None:
    def broken(address, num_cpus) -> float:
        raise PermissionError(13, "Permission denied: '/usr/bin/python3'")

    monkeypatch.setattr(ray_runner, "start_ray", broken)
    code = main(["--grid", "smoke", "--only", ONLY, "--out", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.strip().splitlines() == [
        "harness.run: error: cannot start a local Ray: [Errno 13] Permission denied: '/usr/bin/python3'"]
    assert not list((tmp_path / "o").rglob("*.parquet"))


def test_the_plan_is_made_under_the_lock(no_ray, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A second driver that classified the cells before taking the lock would work from a stale list
    when the first finishes in between: the classification must see the lock held."""
    import harness.grid_cli as grid_cli

    seen = []
    real = grid_cli.classify

    def classify(cells, out):
        seen.append((Path(out) / grid_cli.LOCK).exists())
        return real(cells, out)

    monkeypatch.setattr(grid_cli, "classify", classify)
    monkeypatch.setattr(ray_runner, "run_cells", lambda cells, out, *a, **k: Outcome())
    main(["--grid", "smoke", "--only", ONLY, "--out", str(tmp_path), "--no-progress"])
    assert seen and seen[0] is True, seen
