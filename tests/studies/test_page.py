"""The reproduction page's generated blocks: only they change, each from its table, and --check
tells a page whose blocks differ from its tables."""

from pathlib import Path

import pandas as pd

from harness.cell import CellSpec, run_cell
from harness.store import write_cell
from studies.nguyen2021.page import blocks, main, render

PAGE = """# Title
Hand-written text that stays.
<!-- generated: verdicts -->
old table
<!-- end generated: verdicts -->
More prose.
<!-- generated: unknown-block -->
kept as it is
<!-- end generated: unknown-block -->
"""


def test_render_replaces_only_the_named_blocks() -> None:
    out = render(PAGE, {"verdicts": "| a |\n|---|\n| 1 |"})
    assert "old table" not in out and "| a |\n|---|\n| 1 |\n<!-- end generated: verdicts -->" in out
    assert "Hand-written text that stays." in out and "More prose." in out
    assert "kept as it is" in out  # a block without content here is left alone
    assert render(out, {"verdicts": "| a |\n|---|\n| 1 |"}) == out  # idempotent


def _folder(tmp_path: Path) -> Path:
    results = tmp_path / "paper"
    spec = CellSpec.make("branin-1-1-discrete", "random", seed=0, iterations=2)
    write_cell(results, spec, run_cell(spec))
    (results / "_grid.json").write_text('{"grid": "paper", "cells": [{}, {}]}')
    report = results / "_report"
    report.mkdir()
    pd.DataFrame({"claim": ["C1", "C7"], "statement": ["on par", "same queries"],
                  "verdict": ["inconclusive", "reproduced"], "verdict_last10": ["reproduced", None],
                  "sub-claims": ["2 inconclusive", "8 reproduced"]}).to_csv(report / "claims_overall.csv",
                                                                          index=False)
    pd.DataFrame({"claim": ["C1", "C1"], "problem": ["branin-1-1-discrete"] * 2,
                  "comparison": ["vucb-unif vs rhokg-apx"] * 2, "statistic": ["final", "final"],
                  "variant": ["default", "gp=borisk"], "n_seeds": [10, 10], "p_value": [0.2, 0.01],
                  "verdict": ["inconclusive", "reproduced"]}).to_csv(report / "claims.csv", index=False)
    pd.DataFrame({"problem": ["branin-1-1-discrete"], "algorithm": ["random"],
                  "mean": [-2.5]}).to_csv(report / "final_table.csv", index=False)
    return results


def test_blocks_come_from_the_tables_and_the_cells(tmp_path: Path) -> None:
    made = blocks(_folder(tmp_path))
    assert "| C1 | on par | inconclusive | **reproduced** | 2 inconclusive |" in made["verdicts"]
    assert "gp=borisk" not in made["subclaims"]  # the default configuration only
    assert made["subclaims"].count("\n") == 2  # head, rule, one row
    assert "- cells: 1, of which 0 resumed from a checkpoint" in made["provenance"]
    assert "C1 inconclusive (final), **reproduced** (last 10)" in made["fig3_discrete"]
    assert "C7 **reproduced** (final), - (last 10)" in made["fig_alpha0"]
    assert "![" in made["fig3_discrete"] and "paper/_report/fig3_discrete.png" in made["fig3_discrete"]


def test_check_tells_a_page_whose_blocks_differ(tmp_path: Path) -> None:
    results = _folder(tmp_path)
    page, readme = tmp_path / "README.md", tmp_path / "PROJECT.md"
    page.write_text(PAGE)
    readme.write_text("# Project\n<!-- generated: reproduction -->\n<!-- end generated: reproduction -->\n")
    paths = ["--results", str(results), "--page", str(page), "--readme", str(readme)]
    assert main([*paths, "--check"]) == 1
    assert main(paths) == 0
    assert main([*paths, "--check"]) == 0
    assert "Hand-written text that stays." in page.read_text()
    summary = readme.read_text()
    assert ("- **Reproduced:** C7\n- **Not reproduced:** none\n"
            "- **Inconclusive:** C1; **not run yet:** none") in summary
    assert "in progress: 1 of 2 cells so far" in summary and "_report/fig3_discrete.png" in summary


def test_the_extra_seeds_block_adjusts_by_the_paper_runs_family() -> None:
    """At 30 seeds a sub-claim's p is multiplied by its family's size in the paper run (Bonferroni,
    capped at 1), and decided at 0.05 on it (or on p_against likewise); only sub-claims with more
    seeds than in the paper run are listed."""
    from studies.nguyen2021.page import extra_block

    keys = {"claim": ["C3", "C3", "C9"], "problem": ["h", "b", "h"],
            "comparison": ["p vs u", "p vs u", "p vs r"], "statistic": ["final"] * 3,
            "variant": ["default"] * 3}
    paper = pd.DataFrame({**keys, "n_seeds": [10, 10, 10], "effect_mean": [-0.9, -0.4, -0.6],
                          "p_holm": [0.13, 0.5, 0.3], "verdict": ["inconclusive"] * 3, "family": [4, 4, 5],
                          "p_value": [0.03, 0.4, 0.07], "p_against": [0.9, 0.6, 0.9]})
    extra = pd.DataFrame({**keys, "n_seeds": [30, 10, 30], "effect_mean": [-0.87, -0.4, -0.65],
                          "p_holm": [0.004, 0.5, 0.03],
                          "verdict": ["reproduced", "inconclusive", "reproduced"], "family": [2, 2, 2],
                          "p_value": [0.002, 0.4, 0.017], "p_against": [0.99, 0.6, 0.99]})
    rows = extra_block(paper, extra).splitlines()[2:]
    assert len(rows) == 2  # Branin had no more seeds
    cells = [[c.strip() for c in row.strip("|").split("|")] for row in rows]
    assert cells[0][:2] == ["C3", "h"] and cells[0][-2:] == ["0.008", "**reproduced**"]  # 0.002 x 4
    assert cells[1][:2] == ["C9", "h"] and cells[1][-2:] == ["0.085", "inconclusive"]  # 0.017 x 5


def _summary_row(problem: str, target: str, algorithm: str, options: str, mean: float,
                 seconds: float) -> dict:
    series = algorithm if options == "{}" else f"{algorithm} (beta=authors)"
    return {"figure": "f", "problem": problem, "alpha": 0.1, "target": target, "algorithm": algorithm,
            "options": options, "iterations": 60, "series": series, "iteration": 60, "n_seeds": 10,
            "n_floor": 0, "mean": mean, "lower": mean - 0.25, "upper": mean + 0.25, "acq_s_median": seconds}


def test_the_cvar_how_to_tables_put_each_number_in_its_row_and_column() -> None:
    from studies.nguyen2021.page import cvar_blocks

    summary = pd.DataFrame([
        _summary_row("branin-1-1-continuous", "cvar", "cvucb", "{}", -1.5, 0.2),
        _summary_row("branin-1-1-discrete", "cvar", "cvucb", "{}", -2.0, 0.07),
        _summary_row("branin-1-1-discrete", "cvar", "cvucb", '{"beta": "authors"}', -2.25, 0.071),
        _summary_row("branin-1-1-discrete", "cvar", "botorch-risk", "{}", -3.3, 1.92),
        _summary_row("branin-1-1-discrete", "var", "random", "{}", -2.9, 0.000132)])
    made = cvar_blocks(summary)
    assert set(made) == {"cvar-cvar-regret", "cvar-cvar-seconds", "cvar-var-regret", "cvar-var-seconds"}
    lines = made["cvar-cvar-regret"].splitlines()
    assert lines[0] == "10 seeds per cell."
    assert lines[2] == "| problem | `botorch-risk` | `cvucb` | `cvucb (beta=authors)` |"
    # the how-to's problem order (discrete before continuous), not the alphabet's; a missing pair empty
    assert lines[4] == ("| Branin-(1,1) discrete | -3.30 [-3.55, -3.05] | -2.00 [-2.25, -1.75] "
                        "| -2.25 [-2.50, -2.00] |")
    assert lines[5] == "| Branin-(1,1) continuous |  | -1.50 [-1.75, -1.25] |  |"
    assert made["cvar-var-seconds"].splitlines()[-1] == "| Branin-(1,1) discrete | 0.000132 |"
    assert made["cvar-cvar-seconds"].splitlines()[4] == "| Branin-(1,1) discrete | 1.92 | 0.07 | 0.071 |"
