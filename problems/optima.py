"""Certified optima: a documented dense-grid search with local zoom refinement.

``python -m problems --write-optima`` recomputes every registered problem's targets and rewrites
``problems/optima.json`` (committed); ``python -m problems --check-optima`` recomputes and compares.

The search, for an objective g(x) on [0, 1]^d_x (g is VaR_alpha(f(x, Z)) or min_z f(x, z), both
exact over a discrete Z):

1. evaluate g on a regular grid (``GRID_PER_AXIS[d_x]`` points per axis, ends included);
2. keep the ``N_CANDIDATES`` best grid-local maxima (a point no smaller than its neighbours);
3. around each, evaluate a ``ZOOM_POINTS``-per-axis grid spanning +- h (h = the grid step), move to
   its best point, shrink h by ``ZOOM_POINTS // 4`` and repeat until h < ``ZOOM_TOL``.

Zooming evaluates g only, so it copes with the kinks of VaR (where the selected order statistic
changes) that defeat gradient and quadratic-fit methods. g is Lipschitz with constant L (a few
units here), so the value is within about L * ZOOM_TOL of the local maximum's, far below 1e-7.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from problems.measures import risk_measure

OPTIMA_FILE = Path(__file__).with_name("optima.json")
REGENERATE_COMMAND = "python -m problems --write-optima"

GRID_PER_AXIS = {1: 100_001, 2: 501, 3: 101}
N_CANDIDATES = 10
ZOOM_POINTS = 21
ZOOM_TOL = 1e-11
#: x points evaluated per call of g, to bound memory (g expands each x over the whole support).
CHUNK = 16384


@dataclass(frozen=True)
class SearchResult:
    """Outcome of :func:`grid_zoom_maximize`.

    Attributes:
        value: the best value found (a lower bound of the maximum, within ~1e-10 of it).
        argmax: the point attaining it, length d_x.
        coarse_value: the best value on the initial grid.
        evaluations: number of points at which g was evaluated.
    """

    value: float
    argmax: tuple[float, ...]
    coarse_value: float
    evaluations: int

    def to_json(self) -> dict:
        return {
            "value": self.value,
            "argmax": list(self.argmax),
            "coarse_value": self.coarse_value,
            "evaluations": self.evaluations,
        }


def _evaluate(g: Callable[[Tensor], Tensor], X: Tensor) -> Tensor:
    return torch.cat([g(chunk) for chunk in X.split(CHUNK)])


def _grid(n_per_axis: int, d: int, low: Tensor, high: Tensor) -> Tensor:
    """``n^d x d`` grid on the box [low, high]."""
    t = torch.linspace(0.0, 1.0, n_per_axis, dtype=torch.float64)
    axes = [low[i] + (high[i] - low[i]) * t for i in range(d)]
    mesh = torch.meshgrid(*axes, indexing="ij")
    return torch.stack([m.reshape(-1) for m in mesh], dim=-1)


def _local_maxima(values: Tensor, n_per_axis: int, d: int) -> Tensor:
    """Flat indices of grid points no smaller than any of their 3^d - 1 neighbours."""
    grid_values = values.reshape((1, 1) + (n_per_axis,) * d)
    pool = {1: torch.nn.functional.max_pool1d, 2: torch.nn.functional.max_pool2d,
            3: torch.nn.functional.max_pool3d}[d]
    padded = torch.nn.functional.pad(grid_values, (1, 1) * d, value=-torch.inf)
    pooled = pool(padded, kernel_size=3, stride=1)
    return torch.nonzero((grid_values >= pooled).reshape(-1)).squeeze(-1)


def grid_zoom_maximize(
    g: Callable[[Tensor], Tensor], d_x: int, grid_per_axis: int | None = None,
    n_candidates: int = N_CANDIDATES, zoom_tol: float = ZOOM_TOL,
) -> SearchResult:
    """Maximize ``g`` (``batch x d_x`` -> ``batch``) over [0, 1]^d_x; see the module docstring."""
    n = grid_per_axis or GRID_PER_AXIS[d_x]
    zeros = torch.zeros(d_x, dtype=torch.float64)
    ones = torch.ones(d_x, dtype=torch.float64)
    X = _grid(n, d_x, zeros, ones)
    values = _evaluate(g, X)
    evaluations = X.shape[0]
    maxima = _local_maxima(values, n, d_x)
    order = torch.argsort(values[maxima], descending=True)[:n_candidates]
    coarse_value = float(values.max())
    best_value, best_x = coarse_value, X[values.argmax()].clone()
    for start in maxima[order]:
        center, center_value, h = X[start].clone(), float(values[start]), 1.0 / (n - 1)
        while h > zoom_tol:
            local = _grid(ZOOM_POINTS, d_x, (center - h).clamp(0, 1), (center + h).clamp(0, 1))
            local_values = _evaluate(g, local)
            evaluations += local.shape[0]
            i = int(local_values.argmax())
            if float(local_values[i]) > center_value:
                center, center_value = local[i].clone(), float(local_values[i])
            h /= ZOOM_POINTS // 4
        if center_value > best_value:
            best_value, best_x = center_value, center
    return SearchResult(best_value, tuple(best_x.tolist()), coarse_value, evaluations)


#: The general search (:func:`sobol_compass_maximize`): scrambled Sobol points, then a compass
#: search from the best of them, until the step is below the tolerance.
GENERAL_POINTS = 4096
GENERAL_CANDIDATES = 10
GENERAL_TOL = 1e-9


def sobol_compass_maximize(g: Callable[[Tensor], Tensor], d_x: int, points: int = GENERAL_POINTS,
                           n_candidates: int = GENERAL_CANDIDATES, tol: float = GENERAL_TOL,
                           seed: int = 0) -> SearchResult:
    """Maximize ``g`` (``batch x d_x`` -> ``batch``) over [0, 1]^d_x for any d_x: ``points``
    scrambled Sobol points, then from each of the ``n_candidates`` best a compass search (the 2 d_x
    points one step along each axis; move to the best if it improves, else halve the step; all
    candidates at once) until every step is below ``tol``.

    Accuracy: not certified. The compass search ends at a point no axis step of ``tol`` improves,
    a local maximum for a smooth g (within about L * tol); at a kink of VaR it can stop short of
    the maximum along a ridge, and a maximum whose basin none of the Sobol points falls in is
    missed. The value is a lower bound of the maximum: the callers store it as such
    (``lower_bound``), so a run that beats it has a negative regret that says so.
    """
    engine = torch.quasirandom.SobolEngine(d_x, scramble=True, seed=seed)
    X = engine.draw(points, dtype=torch.float64)
    values = _evaluate(g, X)
    evaluations = points
    coarse_value = float(values.max())
    top = torch.topk(values, min(n_candidates, points)).indices
    centers, center_values = X[top].clone(), values[top].clone()  # k x d_x, k
    steps = torch.full((centers.shape[0],), 0.5 * points ** (-1.0 / d_x), dtype=torch.float64)
    eye = torch.eye(d_x, dtype=torch.float64)
    directions = torch.cat([eye, -eye])  # 2 d_x x d_x
    while bool((steps >= tol).any()):
        active = steps >= tol
        trial = (centers[active, None, :] + steps[active, None, None] * directions).clamp(0.0, 1.0)
        trial_values = _evaluate(g, trial.reshape(-1, d_x)).reshape(trial.shape[:2])  # a x 2 d_x
        evaluations += trial_values.numel()
        best, i = trial_values.max(dim=-1)
        better = best > center_values[active]
        index = torch.nonzero(active).squeeze(-1)
        moved = index[better]
        centers[moved] = trial[better, i[better]]
        center_values[moved] = best[better]
        steps[index[~better]] /= 2.0
    j = int(center_values.argmax())
    return SearchResult(float(center_values[j]), tuple(centers[j].tolist()), coarse_value, evaluations)


def _general(problem) -> bool:
    """Whether ``problem`` has no dedicated search setting (its d_x, or its (d_x, d_z) under a
    continuous Z, is not in the tables), so that :func:`search_problem` uses the general one."""
    if getattr(problem.z, "is_discrete", True):
        return problem.d_x not in GRID_PER_AXIS
    return (problem.d_x, problem.d_z) not in CONTINUOUS_SEARCH


#: The search under a continuous Z, by (d_x, d_z): each VaR is a quadrature (milliseconds for
#: d_z = 1, 0.3 s for d_z = 2), so the grid is coarser and fewer maxima are zoomed into. The VaR is
#: then a smooth function of x away from a few kinks, and the quadrature's own error (< 1e-6)
#: dominates a zoom ending at steps of 1e-9.
CONTINUOUS_SEARCH = {
    (1, 1): {"grid_per_axis": 2001, "n_candidates": 5, "zoom_tol": 1e-9},
    (2, 1): {"grid_per_axis": 201, "n_candidates": 5, "zoom_tol": 1e-9},
    (1, 2): {"grid_per_axis": 201, "n_candidates": 3, "zoom_tol": 1e-8},
}


#: The targets an entry of the table holds: VaR_alpha, the worst case, CVaR_alpha and the mean.
TARGETS = ("var", "worst_case", "cvar", "mean")


def objective(problem, target: str, alpha: float) -> Callable[[Tensor], Tensor]:
    """The function of x a target (a risk measure's name) maximizes: ``batch x d_x`` -> ``batch``."""
    return risk_measure(target).objective(problem, alpha)


def search_problem(problem, alpha: float | None = None, workers: int = 1, partial: bool = False,
                   general: bool = False, points: int = GENERAL_POINTS,
                   targets: tuple[str, ...] = ("var", "worst_case")) -> dict:
    """The ``targets`` (:data:`TARGETS`) of ``problem`` (a :class:`problems.base.Problem`) at
    ``alpha``: an entry of the table, with one search result per target.

    ``workers`` and ``partial`` only matter to a problem's own search
    (:attr:`problems.base.Problem.optimum_search`: robot-push's and the portfolio's). A problem
    without a dedicated setting (any d_x, any d_z), or any problem with ``general``, gets the
    general search (:func:`sobol_compass_maximize` with ``points`` Sobol points), whose entry says
    ``"method": "sobol-compass"`` and ``"lower_bound": true``.
    """
    for target in targets:
        objective(problem, target, 0.5)  # ValueError on an unknown target, before any search
    if problem.optimum_search is not None and not general:
        return problem.optimum_search(problem, alpha, workers=workers, partial=partial, targets=targets)
    alpha = problem.alpha if alpha is None else alpha
    start = time.perf_counter()
    if general or _general(problem):
        found = {t: sobol_compass_maximize(objective(problem, t, alpha), problem.d_x, points).to_json()
                 for t in targets}
        return {"alpha": alpha, **found, "method": "sobol-compass", "points": points,
                "lower_bound": True, "seconds": round(time.perf_counter() - start, 1)}
    settings = {}
    if not getattr(problem.z, "is_discrete", True):
        settings = CONTINUOUS_SEARCH[(problem.d_x, problem.d_z)]
    found = {t: grid_zoom_maximize(objective(problem, t, alpha), problem.d_x, **settings).to_json()
             for t in targets}
    return {
        "alpha": alpha,
        **found,
        "grid_per_axis": settings.get("grid_per_axis", GRID_PER_AXIS[problem.d_x]),
        "seconds": round(time.perf_counter() - start, 1),
    }


def write_table(table: dict) -> None:
    """Atomically rewrite the committed table with ``table`` (problem name -> entry)."""
    payload = {"command": REGENERATE_COMMAND, "problems": dict(sorted(table.items()))}
    tmp = OPTIMA_FILE.with_name("." + OPTIMA_FILE.name + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2) + "\n")
    tmp.replace(OPTIMA_FILE)


def load_table() -> dict:
    """The committed optima table (empty if it does not exist yet)."""
    if not OPTIMA_FILE.exists():
        return {}
    return json.loads(OPTIMA_FILE.read_text())["problems"]
