"""Panel placement and colours: the paper's layout, extra settings kept, one colour per algorithm."""

import pandas as pd

from analysis.figures import OTHER, assign_figures, colours


def _bands(rows: list[tuple[str, float, str, int]]) -> pd.DataFrame:
    """Iteration-0 band rows: (problem, alpha, target, seeds)."""
    return pd.DataFrame([{"problem": p, "alpha": a, "target": t, "iteration": 0, "n_seeds": n}
                         for p, a, t, n in rows])


def test_paper_layout_and_other_settings() -> None:
    panels = assign_figures(_bands([
        ("hartmann-2-1-discrete", 0.1, "var", 20),
        ("branin-1-1-discrete", 0.1, "var", 30),
        ("branin-1-1-discrete", 0.05, "var", 4),  # another alpha: not the paper's panel
        ("branin-1-1-discrete", 4e-13, "worst_case", 30),
        ("robot-push-3-2", 0.1, "var", 30),
        ("my-problem", 0.1, "var", 3),
    ])).set_index(["problem", "alpha", "target"])
    where = ["figure", "position"]
    assert tuple(panels.loc[("branin-1-1-discrete", 0.1, "var"), where]) == ("fig3_discrete", 0)
    assert tuple(panels.loc[("hartmann-2-1-discrete", 0.1, "var"), where]) == ("fig3_discrete", 3)
    assert panels.loc[("branin-1-1-discrete", 0.05, "var"), "figure"] == OTHER
    assert panels.loc[("branin-1-1-discrete", 4e-13, "worst_case"), "figure"] == "fig_alpha0"
    assert tuple(panels.loc[("robot-push-3-2", 0.1, "var"), where]) == ("fig5_simulated", 1)
    assert panels.loc[("my-problem", 0.1, "var"), "figure"] == OTHER
    assert sorted(panels.loc[panels["figure"] == OTHER, "position"]) == [0, 1]


def test_one_colour_per_algorithm_whatever_the_set() -> None:
    few = colours(["vucb-prob", "rhokg-apx"])
    many = colours(["random", "rhokg-apx", "stableopt", "vucb-prob", "vucb-unif", "mine", "yours"])
    assert few["vucb-prob"] == many["vucb-prob"] and few["rhokg-apx"] == many["rhokg-apx"]
    assert len(set(many.values())) == len(many)
