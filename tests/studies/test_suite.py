"""The suite's grid: each of the field's problems at its source's risk measures and budget against
every method of that measure, 10 seeds (issue 39 item 11), found by name like the paper's."""

from __future__ import annotations

from algorithms import ALGORITHMS
from harness.grid import named_grids, resolve_grid
from problems import build_problem


def test_the_suite_is_every_method_of_each_source_measure_on_each_problem() -> None:
    assert "suite" in named_grids()
    cells = resolve_grid("suite").cells
    expected = {"branin-williams-2-2": ({"var", "cvar"}, 120), "hartmann6-5-1": ({"cvar"}, 100),
                "hartmann6-1-5": ({"cvar"}, 100), "yacht-5-1": ({"cvar"}, 60),
                "marzat-f6-4-3": ({"cvar"}, 100), "newsvendor-1-2": ({"cvar"}, 50),
                "portfolio-3-2": ({"cvar"}, 80)}
    assert {c.problem for c in cells} == set(expected)
    for problem, (risks, iterations) in expected.items():
        mine = [c for c in cells if c.problem == problem]
        assert {c.risk for c in mine} == risks
        assert {c.iterations for c in mine} == {iterations}
        for risk in risks:
            methods = {c.algorithm for c in mine if c.risk == risk}
            # every registered method that optimizes the measure and handles the problem's kind of
            # Z, but the variants of a method (the released rho-KG^apx) and the paper's other
            # V-UCB rules
            kind = "discrete" if build_problem(problem, with_optimum=False).z.is_discrete else "continuous"
            handles = {a for a, f in ALGORITHMS.items() if risk in f.risks and kind in f.z_kinds}
            assert methods == handles - {"rhokg-apx-released", "vucb-unif", "stableopt", "vucb-prob-saa"}
            for algorithm in methods:
                seeds = sorted(c.seed for c in mine if c.risk == risk and c.algorithm == algorithm)
                assert seeds == list(range(10))
    # the problems' alphas; full effort but for rho-KG^apx and the one-shot KGs, at the reduced
    # effort their classes declare for the problem's kind of Z; BoRisk's 40 samples of W for its
    # method on f6
    assert all(c.alpha is None for c in cells)
    for c in cells:
        kind = "discrete" if build_problem(c.problem, with_optimum=False).z.is_discrete else "continuous"
        expected_options = {}
        if c.algorithm in ("rhokg-apx", "rhokg-oneshot", "botorch-risk"):
            expected_options = dict(ALGORITHMS[c.algorithm].reduced_options(kind))
        if (c.problem, c.algorithm) == ("marzat-f6-4-3", "rhokg-apx"):
            expected_options["num_w_samples"] = 40
        assert dict(c.options) == expected_options, (c.problem, c.algorithm)
    assert len(cells) == len({(c.problem, c.algorithm, c.risk, c.seed) for c in cells}) == 550


def test_the_full_effort_sample_pairs_with_the_suites_cells() -> None:
    """The sample (grid suite-full-effort) is the suite's cells of its problems and methods, seeds
    0-5, with only the reduced effort taken away: same problem, measure, T and seed (so the pairs
    start alike), and options that differ by exactly the declared reduced effort."""
    suite = {(c.problem, c.algorithm, c.risk, c.seed): c for c in resolve_grid("suite").cells}
    sample = resolve_grid("suite-full-effort").cells
    assert {(c.problem, c.algorithm) for c in sample} == {
        ("yacht-5-1", "rhokg-apx"), ("yacht-5-1", "rhokg-oneshot"), ("yacht-5-1", "botorch-risk"),
        ("hartmann6-5-1", "rhokg-apx")}
    assert sorted({c.seed for c in sample}) == [0, 1, 2, 3, 4, 5] and len(sample) == 24
    for c in sample:
        twin = suite[(c.problem, c.algorithm, c.risk, c.seed)]
        assert (c.iterations, c.alpha, c.gp) == (twin.iterations, twin.alpha, twin.gp)
        reduced = dict(ALGORITHMS[c.algorithm].reduced_options("discrete"))
        assert dict(c.options) == {} and dict(twin.options) == reduced
