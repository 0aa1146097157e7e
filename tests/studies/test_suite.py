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
                "portfolio-3-2": ({"cvar"}, 80), "portfolio-cvucb-3-2": ({"cvar"}, 60)}
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
    # the problems' alphas; every method at its full effort (its defaults); the one-shot KGs on the
    # fused engine with the exact gradient; BoRisk's 40 samples of W for its method on f6
    assert all(c.alpha is None for c in cells)
    # BoRisk's initial design, 2 d + 2 points, where the problem's own differs (the newsvendor's 6)
    for c in cells:
        d = build_problem(c.problem, with_optimum=False)
        borisk = 2 * (d.d_x + d.d_z) + 2
        assert c.n_init == (borisk if c.problem == "newsvendor-1-2" else None), c
    for c in cells:
        expected_options = {}
        if c.algorithm in ("rhokg-oneshot", "botorch-risk"):
            expected_options = {"engine": "fused", "gradient": "exact"}
        if c.algorithm in ("cvucb", "cvts"):  # their authors' scripts: --beta 3.0, a constant
            expected_options = {"beta": "authors"}
        if (c.problem, c.algorithm) == ("marzat-f6-4-3", "rhokg-apx"):
            expected_options["num_w_samples"] = 40
        assert dict(c.options) == expected_options, (c.problem, c.algorithm)
    assert len(cells) == len({(c.problem, c.algorithm, c.risk, c.seed) for c in cells}) == 620


def test_the_suites_other_cells_are_the_published_suites() -> None:
    """The cells whose settings the suite as its sources ran it keeps (all but rho-KG^apx's and the
    one-shot KGs', CV-UCB's and CV-TS's, with their authors' beta now, and the newsvendor's, from
    BoRisk's design) have the specs, and so the hashes, of the published suite's cells: those 150
    cells are copied from the publication into the run, not rerun (docs/reproduction/_pinned/README.md)."""
    import json
    from pathlib import Path

    from harness.results import spec_from_dict, spec_hash

    record = json.loads((Path(__file__).resolve().parents[2] / "docs" / "reproduction" / "suite" /
                         "_grid.json").read_text())
    published = {spec_hash(spec_from_dict(c)) for c in record["cells"]}
    cells = resolve_grid("suite").cells
    moved = ("rhokg-apx", "rhokg-oneshot", "botorch-risk", "cvucb", "cvts")
    new = ("newsvendor-1-2", "portfolio-cvucb-3-2")  # BoRisk's design; the CV-UCB paper's portfolio
    kept = {spec_hash(c) for c in cells if c.algorithm not in moved and c.problem not in new}
    assert len(kept) == 150 and kept <= published
    assert not {spec_hash(c) for c in cells if spec_hash(c) not in kept} & published


def test_the_full_effort_study_reads_every_cell_of_the_grid_as_its_own_configuration() -> None:
    """The study the run at full effort is published under (``FULL_EFFORT``, ``STUDY`` at republication)
    takes every cell of the grid as its default configuration, so its report drops none; the published
    run's study (reduced effort) does not take the full-effort KG cells so."""
    from analysis.claim_cells import DEFAULT_OPTIONS, cell_settings
    from harness.study import check_study
    from studies.suite.study import FULL_EFFORT, STUDY

    assert check_study(FULL_EFFORT) is FULL_EFFORT
    cells = resolve_grid("suite").cells
    settings = {(c.problem, c.algorithm): cell_settings(dict(c.options), c.algorithm, c.problem, FULL_EFFORT)
                for c in cells}
    assert set(settings.values()) == {DEFAULT_OPTIONS}, {k: v for k, v in settings.items() if v != "{}"}
    published = {cell_settings(dict(c.options), c.algorithm, c.problem, STUDY)
                 for c in cells if c.algorithm == "rhokg-oneshot"}
    assert DEFAULT_OPTIONS not in published


def test_the_full_effort_studys_claims_and_figures_are_cells_of_the_grid() -> None:
    """Every pair a claim of ``FULL_EFFORT`` compares ran on each of its problems at its measure, S3 reads
    the CV-UCB paper's own portfolio, and the CVaR figure has a panel for every problem of the grid."""
    from studies.suite.study import FULL_EFFORT

    ran = {(c.problem, c.algorithm, c.risk) for c in resolve_grid("suite").cells}
    for claim in FULL_EFFORT.claims:
        for c in claim.comparisons:
            for problem in c.problems:
                for method in (*(c.a if isinstance(c.a, tuple) else (c.a,)), c.b):
                    assert (problem, method, c.target) in ran, (claim.id, problem, method, c.target)
    (s3,) = [claim for claim in FULL_EFFORT.claims if claim.id == "S3"]
    assert {p for c in s3.comparisons for p in c.problems} == {
        "hartmann6-5-1", "hartmann6-1-5", "yacht-5-1", "portfolio-cvucb-3-2"}
    cvar = next(f for f in FULL_EFFORT.figures if f.target == "cvar")
    assert set(cvar.problems) == {problem for problem, _, risk in ran if risk == "cvar"}
