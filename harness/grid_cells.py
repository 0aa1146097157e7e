"""Cells as grids hold them: the :class:`Grid` value and its :class:`GridError`, blocks of cells
(:func:`cell_block`), a cell's label and the selection by label (:func:`cell_label`, :func:`select`),
and whether a cell can run here (:func:`unavailable_reason`).

A cell may name a problem or an algorithm that is not registered yet: it is "not available", listed,
never silently dropped, and it runs once its problem and algorithm exist (same spec, same hash).
The named grids and grid files that are made of these cells are :mod:`harness.grid`'s.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass

from algorithms import ALGORITHMS, algorithm_factory
from algorithms.gp import DEFAULT_GP
from harness.spec import CellSpec
from problems import PROBLEMS, DiscreteZ, build_problem
from problems.measures import DEFAULT_RISK
from problems.plugins import is_import_path


class GridError(ValueError):
    """A grid that cannot be built (bad file, unknown name, bad value): reported as one line."""


BELOW_MIN_MASS = "below-min-mass"


@dataclass(frozen=True)
class Grid:
    """A named list of cells (in a fixed order: the order of the figures, then seeds)."""

    name: str
    cells: tuple[CellSpec, ...]
    description: str = ""
    #: The study that declares the grid (its name, import path or TOML file; "" for none): recorded
    #: with the results, so that the report tests that study's claims.
    study: str = ""


def unavailable_reason(spec: CellSpec) -> str | None:
    """Why ``spec`` cannot run now, if it cannot.

    Args:
        spec: the cell.

    Returns:
        The reasons ``"; "``-joined (its problem or algorithm is not registered, or its import path names
        nothing usable here), or None.
    """
    missing = []
    if spec.problem not in PROBLEMS:
        if not is_import_path(spec.problem):
            missing.append(f"problem {spec.problem} not registered")
        else:
            try:
                build_problem(spec.problem, with_optimum=False)
            except (KeyError, ValueError) as error:
                missing.append(str(error))
    if spec.algorithm not in ALGORITHMS:
        if not is_import_path(spec.algorithm):
            missing.append(f"algorithm {spec.algorithm} not registered")
        else:
            try:
                algorithm_factory(spec.algorithm)
            except (KeyError, ValueError) as error:
                missing.append(str(error))
    return "; ".join(missing) or None


def cell_label(spec: CellSpec) -> str:
    """The label of a cell: what ``--only`` matches.

    Args:
        spec: the cell.

    Returns:
        ``problem/algorithm/seedN``, plus ``risk=cvar``, ``alpha=..``, ``T=..``, ``n_init=..``, ``gp=..`` and
        its options when set, space-separated.
    """
    label = f"{spec.problem}/{spec.algorithm}/seed{spec.seed}"
    extras = []
    if spec.risk != DEFAULT_RISK:
        extras.append(f"risk={spec.risk}")
    if spec.alpha is not None:
        extras.append(f"alpha={spec.alpha:.4g}")
    if spec.iterations is not None:
        extras.append(f"T={spec.iterations}")
    if spec.n_init is not None:
        extras.append(f"n_init={spec.n_init}")
    if spec.gp != DEFAULT_GP:
        extras.append(f"gp={spec.gp}")
    extras += [f"{name}={value}" for name, value in spec.options]
    return " ".join([label, *extras])


def alpha_below_min_mass(problem_name: str) -> float:
    """Half the smallest mass of the problem's discrete Z: VaR becomes the worst case (alpha -> 0).

    Args:
        problem_name: the problem's name.

    Returns:
        The alpha.

    Raises:
        GridError: a problem with a continuous Z.
    """
    problem = build_problem(problem_name, with_optimum=False)
    if not isinstance(problem.z, DiscreteZ):
        raise GridError(f"alpha {BELOW_MIN_MASS!r} needs a discrete Z; {problem_name} has a continuous one")
    return problem.z.min_mass / 2


def cell_block(problems: Iterable[str], algorithms: Iterable[str], seeds: Iterable[int],
           iterations: int | dict[str, int] | None = None, alpha: float | str | None = None,
           options: dict | None = None, gp: str = DEFAULT_GP, risk: str = DEFAULT_RISK,
           n_init: int | None = None) -> list[CellSpec]:
    """The cells of problems x algorithms x seeds (seeds innermost), with shared settings.

    Args:
        problems: the problems.
        algorithms: the algorithms.
        seeds: the seeds.
        iterations: the iterations, for every problem or by problem (None: the problem's own).
        alpha: the alpha (None: the problem's own; :data:`BELOW_MIN_MASS`: :func:`alpha_below_min_mass`).
        options: the algorithms' options.
        gp: the GP profile.
        risk: the risk measure.
        n_init: the initial design's size (None: the problem's own).

    Returns:
        The cells, problem by problem, then algorithm, then seed.
    """
    cells = []
    for problem in problems:
        t = iterations.get(problem) if isinstance(iterations, dict) else iterations
        a = alpha_below_min_mass(problem) if alpha == BELOW_MIN_MASS else alpha
        for algorithm in algorithms:
            cells += [CellSpec.make(problem, algorithm, seed, t, a, options, gp=gp, risk=risk, n_init=n_init)
                      for seed in seeds]
    return cells


def select(cells: Iterable[CellSpec], pattern: str) -> list[CellSpec]:
    """The cells whose :func:`cell_label` matches ``pattern``.

    Args:
        cells: the cells.
        pattern: a glob if it has any of ``*?[``, else a substring.

    Returns:
        The matching cells, in their order.
    """
    glob = pattern if any(c in pattern for c in "*?[") else f"*{pattern}*"
    return [c for c in cells if fnmatch.fnmatchcase(cell_label(c), glob)]
