"""The suite page's generated blocks from tables made here, and its command's errors."""

import pandas as pd

from studies.suite import page


def test_the_choice_block_gives_each_kind_measure_and_budget_its_row() -> None:
    choices = pd.DataFrame([
        {"group": "continuous Z", "target": "cvar", "fraction": 0.25, "best": "cvts", "tied": "",
         "n_blocks": 20, "ranks": "", "best_seconds": 0.51, "note": ""},
        {"group": "continuous Z", "target": "cvar", "fraction": 1.0, "best": "rhokg-apx",
         "tied": "cvts, cvucb", "n_blocks": 20, "ranks": "", "best_seconds": 2.0, "note": ""},
        {"group": "discrete Z of 243 points", "target": "cvar", "fraction": 1.0, "best": "cvucb", "tied": "",
         "n_blocks": 10, "ranks": "", "best_seconds": 0.125, "note": ""}])
    lines = page.choice_block(choices).splitlines()
    assert lines[0] == "| problems | measure | budget | use | s/it | no test separates it from | blocks |"
    assert lines[2] == "| continuous Z | CVaR | a quarter | **cvts** | 0.51 | none | 20 |"
    assert lines[3] == "| continuous Z | CVaR | all | **rhokg-apx** | 2 | cvts, cvucb | 20 |"
    assert lines[4] == "| discrete Z of 243 points | CVaR | all | **cvucb** | 0.12 | none | 10 |"


def test_without_a_published_suite_the_command_says_so_and_exits_2(tmp_path, capsys) -> None:
    assert page.main(["--results", str(tmp_path / "none"), "--page", str(tmp_path / "p.md")]) == 2
    assert "a published suite with its report is needed" in capsys.readouterr().err


def test_the_ranks_block_gives_each_problem_then_all_problems_with_the_best_in_bold() -> None:
    rows = [("cvar", "all", "cvucb", 1.25, 20), ("cvar", "all", "random", 1.75, 20),
            ("cvar", "yacht-5-1", "cvucb", 1.5, 10), ("cvar", "yacht-5-1", "random", 1.5, 10),
            ("cvar", "hartmann6-5-1", "cvucb", 1.0, 10), ("cvar", "hartmann6-5-1", "random", 2.0, 10)]
    ranks = pd.DataFrame(rows, columns=["target", "problem", "algorithm", "mean_rank", "n_blocks"])
    friedman = pd.DataFrame([{"target": "cvar", "n_methods": 2, "n_blocks": 20, "n_problems": 2,
                              "statistic": float("nan"), "p": 0.0123, "note": ""}])
    var = [("var", problem, method, rank, 10) for problem in ("all", "branin-williams-2-2")
           for method, rank in (("vucb-prob", 1.0), ("random", 2.0))]
    ranks = pd.concat([ranks, pd.DataFrame(var, columns=ranks.columns)], ignore_index=True)
    lines = page.ranks_block(ranks, friedman).splitlines()
    assert lines[:2] == ["**CVaR** (Friedman's test over the 20 blocks: p = 0.012)", ""]
    assert lines[2] == "| problem | cvucb | random | blocks |"
    assert lines[4] == "| hartmann6-5-1 | **1.00** | 2.00 | 10 |"
    assert lines[5] == "| yacht-5-1 | **1.50** | **1.50** | 10 |"  # a tie: both in bold
    assert lines[6] == "| all problems | **1.25** | 1.75 | 20 |"
    # VaR's table has its own methods, and no Friedman test ran for it
    assert lines[8:11] == ["**VaR** (no Friedman test)", "", "| problem | random | vucb-prob | blocks |"]
    assert lines[12:] == ["| branin-williams-2-2 | 2.00 | **1.00** | 10 |",
                          "| all problems | 2.00 | **1.00** | 10 |"]
    assert page.ranks_block(ranks.iloc[:0], friedman.iloc[:0]).startswith("No two methods")
