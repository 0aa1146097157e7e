"""A user's own study written as a TOML file: its grid runs by name with --study, the study is recorded
with the results, and the report tests its claims and draws its figure; bad studies are one line and
exit 2 before anything runs."""

import json
from pathlib import Path

import pandas as pd
import pytest

from analysis.report import main as report_main
from harness.cell import run_cell
from harness.grid import resolve_grid
from harness.run import main as run_main
from harness.store import write_cell, write_manifest
from harness.study import Beats, load_study

STUDY = """
name = "mine"
description = "V-UCB Prob against random search on Branin"
baseline = "random"

[grids.mine]
seeds = [0, 1, 2, 3, 4]
iterations = 2
[[grids.mine.cells]]
problems = ["branin-1-1-discrete"]
algorithms = ["vucb-prob", "random"]

[[claims]]
id = "M1"
statement = "V-UCB Prob beats random search on Branin"
comparisons = [{ kind = "beats", problems = ["branin-1-1-discrete"], a = "vucb-prob", b = "random" }]

[[figures]]
name = "fig_mine"
title = "Branin, discrete Z"
problems = ["branin-1-1-discrete"]
shape = [1, 1]
target = "var"
series = ["vucb-prob", "random", "stableopt"]
"""


@pytest.fixture
def study(tmp_path: Path) -> Path:
    path = tmp_path / "mine.toml"
    path.write_text(STUDY)
    return path


def test_a_toml_study_declares_grids_claims_and_figures(study: Path) -> None:
    loaded = load_study(str(study))
    assert loaded.name == "mine" and loaded.baseline == "random"
    assert loaded.claims[0].comparisons == (Beats(("branin-1-1-discrete",), "vucb-prob", "random"),)
    assert loaded.figures[0].series == ("vucb-prob", "random", "stableopt")
    grid = resolve_grid("mine", str(study))
    assert grid.study == str(study) and len(grid.cells) == 10
    assert {(c.algorithm, c.seed, c.iterations) for c in grid.cells} == {
        (a, s, 2) for a in ("vucb-prob", "random") for s in range(5)}


def test_its_results_are_reported_with_its_claims_and_figure(study: Path, tmp_path: Path) -> None:
    grid = resolve_grid("mine", str(study))
    out = tmp_path / "results"
    for spec in grid.cells:
        write_cell(out, spec, run_cell(spec))
    write_manifest(out, grid.name, list(grid.cells), grid.study)
    assert json.loads((out / "_grid.json").read_text())["study"] == str(study)
    report = tmp_path / "report"
    assert report_main([str(out), "--out", str(report)]) == 0  # the study comes from _grid.json
    overall = pd.read_csv(report / "claims_overall.csv")
    assert list(overall["claim"]) == ["M1"] and overall.loc[0, "statement"].startswith("V-UCB Prob beats")
    assert (report / "fig_mine.png").is_file() and not (report / "fig3_discrete.png").exists()


BAD = {
    "unknown kind": ("kind = \"beats\"", "kind = \"wins\"", "unknown kind 'wins'; valid: beats, on_par"),
    "unknown problem": ("problems = [\"branin-1-1-discrete\"], a", "problems = [\"branin-1-1-discrte\"], a",
                        "unknown problem 'branin-1-1-discrte'; did you mean 'branin-1-1-discrete'?"),
    "unknown algorithm": ("a = \"vucb-prob\"", "a = \"vucb-porb\"",
                          "unknown algorithm 'vucb-porb'; did you mean"),
    "unknown series": ("\"random\", \"stableopt\"]", "\"random\", \"stablopt\"]",
                       "unknown series 'stablopt'"),
    "unknown risk measure": ("target = \"var\"", "target = \"median\"", "unknown risk measure 'median'"),
    "not toml": ("[[claims]]", "[[claims]", "not valid TOML"),
    "a number for text": ('baseline = "random"', "baseline = 3", "baseline must be text, got 3"),
    "a table for a flag": ('baseline = "random"', 'baseline = "random"\nacross_problems = "yes"',
                           "across_problems must be true or false, got 'yes'"),
    "a list for a table": ('baseline = "random"', 'baseline = "random"\naliases = ["a"]',
                           "aliases must be a table, got ['a']"),
    "a number for a list": ("comparisons = [{ kind", "comparisons = 3\nx = [{ kind",
                            "comparisons must be an array of tables, got 3"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_study_is_one_line_and_exit_2_before_anything_runs(case: str, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture) -> None:
    old, new, message = BAD[case]
    assert old in STUDY
    path = tmp_path / "bad.toml"
    path.write_text(STUDY.replace(old, new, 1))
    out = tmp_path / "never"
    assert run_main(["--grid", "mine", "--study", str(path), "--out", str(out), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err, err
    assert not out.exists()
