"""Cost estimates of cells: the seconds a cell takes on one core (:func:`estimate_seconds`), from
the seconds an iteration its algorithm and problem declare (:func:`declared_rate`) or those measured
on finished cells (:func:`measured_rate`), and the iterations a cell runs (:func:`cell_iterations`).
A grid run prices its cells with them (the Ray runner submits the costliest first), and so does the
dry run.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import replace

from algorithms import algorithm_factory
from algorithms.cost import DEFAULT_ITERATION_S, ProblemSize, iteration_seconds
from harness.complexity import estimate_timing_seconds
from harness.spec import CellSpec
from problems import PROBLEMS, build_problem
from problems.measures import DEFAULT_RISK
from problems.plugins import is_import_path

#: Seconds of a cell besides its iterations (building the problem and the model, the initial design).
_FIXED_S = 1.0
#: The harness's own seconds an iteration on one of 2 busy cores (the GP update, the recommendation's
#: regret against the true objective) where the problem does not build here; a problem declares its
#: own (:attr:`problems.Problem.overhead_seconds`: the rate measured with an algorithm whose proposals
#: cost nothing).
_HARNESS_S = 0.05
#: The size assumed for a problem that does not build here (its cells cannot run; a guess).
_UNKNOWN_SIZE = ProblemSize(d_x=1, d_z=1, z_size=100, n_init=10, iterations=60)


@functools.lru_cache(maxsize=256)
def _overhead_seconds(name: str) -> float:
    """The harness's seconds an iteration on problem ``name`` (what it declares), or :data:`_HARNESS_S`."""
    try:
        return build_problem(name, with_optimum=False).overhead_seconds
    except (KeyError, ValueError):
        return _HARNESS_S


@functools.lru_cache(maxsize=256)
def _problem_size(name: str, iterations: int) -> ProblemSize:
    """The size of problem ``name`` run for ``iterations``, or :data:`_UNKNOWN_SIZE`."""
    try:
        return ProblemSize.of(build_problem(name, with_optimum=False), iterations)
    except (KeyError, ValueError):
        return replace(_UNKNOWN_SIZE, iterations=iterations)


def declared_rate(spec: CellSpec) -> float:
    """Seconds an iteration of a BO cell, from what its algorithm and its problem declare.

    The algorithm's share is :func:`algorithms.cost.iteration_seconds` (its options' defaults filled in), the
    harness's share is what the problem declares (:attr:`problems.Problem.overhead_seconds`).

    Args:
        spec: the cell.

    Returns:
        The seconds, the algorithm's share :data:`algorithms.cost.DEFAULT_ITERATION_S` for an algorithm that
        does not import here.
    """
    size = replace(_problem_size(spec.problem, cell_iterations(spec)), risk=spec.risk)
    if spec.n_init is not None:  # the cell's own design
        size = replace(size, n_init=spec.n_init)
    try:
        factory = algorithm_factory(spec.algorithm)
    except (KeyError, ValueError):
        factory = None
    seconds = iteration_seconds(factory, size, dict(spec.options)) if factory else DEFAULT_ITERATION_S
    return _overhead_seconds(spec.problem) + seconds


def measured_rate(spec: CellSpec, measured: Mapping[tuple, float]) -> float | None:
    """Seconds an iteration of ``spec`` from the rates of finished cells.

    The rate of cells with the same options and risk measure is taken, else one with other options or
    another risk measure scaled by the declared model (:func:`declared_rate`), else the declared rate scaled
    by how far the algorithm's finished cells on other problems were from theirs (:func:`calibration`).

    Args:
        spec: the cell.
        measured: seconds an iteration of finished cells by (problem, algorithm, options, risk), as
            :mod:`harness.grid_cli` reads them; a key (problem, algorithm, options) stands for the default
            risk measure, and (problem, algorithm) for the default options too.

    Returns:
        The seconds, or None where nothing measured applies.
    """
    rates = {full_key(key): rate for key, rate in measured.items()}
    same = rates.get((spec.problem, spec.algorithm, spec.options, spec.risk))
    if same is not None:
        return same
    for key, rate in rates.items():
        if key[:2] == (spec.problem, spec.algorithm):
            return rate * declared_rate(spec) / declared_rate(_spec_of(spec, key))
    found = calibration(spec, measured)
    return None if found is None else found[0] * declared_rate(spec)


def full_key(key: tuple) -> tuple:
    """A key of the measured rates as (problem, algorithm, options, risk), left-out parts at their defaults.

    Args:
        key: (problem, algorithm), (problem, algorithm, options) or (problem, algorithm, options, risk).

    Returns:
        The four-part key.
    """
    return (*key[:2], key[2] if len(key) > 2 else (), key[3] if len(key) > 3 else DEFAULT_RISK)


def calibration(spec: CellSpec, measured: Mapping[tuple, float]) -> tuple[float, tuple[str, ...]] | None:
    """The factor by which :func:`measured_rate` scales ``spec``'s declared rate when no finished cell
    of its (problem, algorithm) was measured: the geometric mean of measured / declared seconds an
    iteration over the finished cells of its algorithm on other problems. The declared model is often
    off by a factor that depends more on the machine and the load than on the problem (one
    algorithm's cells of a published grid ran at 2.7-4.0 times their declared rate), so a grid that
    has run an algorithm on one problem prices it better on the next; but not always (one
    algorithm's cells on a problem with |W| = 243 ran at 7 times its declared rate on an Intel Xeon,
    its cells on one with |W| = 15 at 0.6 times), which is why the dry run names the factor
    and where it came from (:func:`harness.dry_run.calibration_lines`).

    Args:
        spec: the cell.
        measured: as :func:`measured_rate` takes them.

    Returns:
        The factor and the problems it was measured on (sorted), or None where the algorithm has no
        finished cell, or where its (problem, algorithm) has one (the factor does not apply).
    """
    if any(key[:2] == (spec.problem, spec.algorithm) for key in measured):
        return None
    # the finished cells' declared rate at their problem's own iterations and design, not ``spec``'s
    # (the rates do not keep a cell's T; a grid's cells of a problem usually run its own): taken at
    # the T and design of the cell asked about, a factor of 0.92 measured at T = 100 came out
    # 0.83-1.07 for other problems' cells of the same risk measure. Their risk measure is the key's, not
    # ``spec``'s: taken at ``spec``'s, a factor of 0.92 measured on CVaR cells came out 0.43 for a VaR cell
    found = [(key[0], math.log(rate / declared_rate(replace(_spec_of(spec, key), iterations=None,
                                                            n_init=None))))
             for key, rate in measured.items() if key[1] == spec.algorithm and rate > 0]
    if not found:
        return None
    return math.exp(sum(log for _, log in found) / len(found)), tuple(sorted({name for name, _ in found}))


def _spec_of(spec: CellSpec, key: tuple) -> CellSpec:
    """``spec`` on the problem, options and risk measure of a key of the measured rates (:func:`full_key`)."""
    problem, _, options, risk = full_key(key)
    return replace(spec, problem=problem, options=options, risk=risk)


def _problem_iterations(name: str) -> int:
    """The problem's default number of iterations (60 for an import path that no longer builds:
    the estimate is a guess, and the cell reports its own error when it runs)."""
    try:
        return build_problem(name, with_optimum=False).iterations
    except (KeyError, ValueError):
        return 60


def cell_iterations(spec: CellSpec) -> int:
    """The BO iterations a cell runs.

    Args:
        spec: the cell.

    Returns:
        Its own iterations, else its problem's (60, a guess for the estimate, for a problem that is not
        registered here).
    """
    if spec.iterations is not None:
        return spec.iterations
    if spec.problem in PROBLEMS or is_import_path(spec.problem):
        return _problem_iterations(spec.problem)
    return 60


def estimate_seconds(spec: CellSpec, measured: Mapping[tuple, float] | None = None, done: int = 0) -> float:
    """Estimated single-core seconds of a cell, or of what is left of it.

    A BO cell costs a fixed part and its iterations at the rate ``measured`` gives (:func:`measured_rate`),
    else at the rate its algorithm declares (:func:`declared_rate`); a timing cell is
    :func:`harness.complexity.estimate_timing_seconds`. A cell resumed from a checkpoint runs only the
    iterations after its ``done`` ones, priced at the same rate (iterations are taken as equal work, as
    :class:`harness.progress.Eta` takes them: where an iteration grows with the data, the last ones cost
    more, and the estimate of a late checkpoint's rest leans low); the fixed part stays (the resume
    rebuilds the problem and the model).

    Args:
        spec: the cell.
        measured: seconds an iteration of finished cells (:func:`measured_rate`), or None.
        done: iterations a checkpoint already holds (0: the cell starts afresh).

    Returns:
        The seconds.
    """
    if spec.kind == "timing":
        return estimate_timing_seconds(spec)
    rate = measured_rate(spec, measured) if measured else None
    left = max(0, cell_iterations(spec) - done)
    return _FIXED_S + (declared_rate(spec) if rate is None else rate) * left
