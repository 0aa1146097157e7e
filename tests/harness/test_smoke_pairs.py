"""The smoke grid's (problem, algorithm) pairs that its end-to-end test
(``tests/harness/test_grid_process.py``) does not run as a grid, run here in-process: no xdist group,
so that the two cores share them."""

import dataclasses
import math

import pytest

from harness.cell import run_cell
from tests.harness.test_grid_process import pair_cells, seed0_cells


@pytest.mark.slow
@pytest.mark.parametrize("problem", sorted({c.problem for c in seed0_cells() if pair_cells(c.problem)}))
def test_every_problem_runs_with_every_algorithm(problem: str) -> None:
    """The smoke grid's (problem, algorithm) pairs that :func:`grid_cells` leaves out, each cell as a
    grid's task runs it (:func:`run_cell`, pure: a grid adds only Ray and the store, which the
    end-to-end test covers), for one iteration instead of the grid's three (the initial design, a fit,
    a proposal, an update and a recommendation at each are the code paths a problem meets; more
    iterations repeat them): every iteration's row, one target and a finite regret at each, a
    recommendation in the problem's box. Slow (up to 30 s a problem, its knowledge gradients')."""
    for spec in pair_cells(problem):
        rows = run_cell(dataclasses.replace(spec, iterations=1)).rows
        assert [r["iteration"] for r in rows] == [0, 1], spec
        assert len({r["target"] for r in rows}) == 1, spec  # the cell's measure, or the algorithm's own
        assert all(math.isfinite(r["regret"]) for r in rows), (spec, [r["regret"] for r in rows])
        assert all(0.0 <= v <= 1.0 for r in rows for v in r["x_rec"]), spec
