"""What an algorithm declares about its cost: the seconds of one BO iteration.

An algorithm class may define a classmethod ``iteration_seconds(size, options)``: the seconds its
own part of one BO iteration (``propose`` and ``recommend``) takes on one of two busy cores, on a
problem of size ``size`` (:class:`ProblemSize`), with ``options`` its options with the declared
defaults filled in (:func:`algorithms.options.resolved_options`). The harness adds its own share
(the GP update and the regret) and uses the sum for ``--dry-run``'s estimate and the ETA, unless
finished cells of the results folder measured the rate (``harness.grid.estimate_seconds``).

A class that defines none (a plug-in) is estimated at :data:`DEFAULT_ITERATION_S`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from algorithms.options import resolved_options
from problems import Problem

__all__ = ["DEFAULT_ITERATION_S", "ProblemSize", "iteration_seconds"]

#: An algorithm's seconds an iteration when it declares no cost model: a middling guess.
DEFAULT_ITERATION_S = 0.45


@dataclass(frozen=True)
class ProblemSize:
    """What a cost model may read of a problem and a run.

    Attributes:
        d_x, d_z: the dimensions of x and z.
        z_size: the size of a discrete Z's support; None for a continuous Z.
        n_init: the initial design's size.
        iterations: the BO iterations of the run (the data grow from ``n_init`` to
            ``n_init + iterations``).
        risk: the risk measure the run optimizes (a method's search may cost more on one).
    """

    d_x: int
    d_z: int
    z_size: int | None
    n_init: int
    iterations: int
    risk: str = "var"

    @property
    def z_kind(self) -> str:
        return "continuous" if self.z_size is None else "discrete"

    @property
    def mean_data(self) -> float:
        """The mean number of observations over the run's iterations."""
        return self.n_init + self.iterations / 2

    @staticmethod
    def of(problem: Problem, iterations: int | None = None) -> ProblemSize:
        """The size of ``problem`` run for ``iterations`` (default: its own)."""
        size = problem.z.size if problem.z.is_discrete else None
        return ProblemSize(problem.d_x, problem.d_z, size, problem.n_init,
                           problem.iterations if iterations is None else iterations)


def iteration_seconds(cls: type, size: ProblemSize, given: Mapping[str, object]) -> float:
    """The seconds of the algorithm class ``cls``'s part of one iteration with the options
    ``given`` (its declared defaults for the rest): its ``iteration_seconds`` model, or
    :data:`DEFAULT_ITERATION_S`."""
    model = getattr(cls, "iteration_seconds", None)
    if model is None:
        return DEFAULT_ITERATION_S
    try:
        return float(model(size, resolved_options(cls, given, size.z_kind)))
    except (KeyError, TypeError, ValueError):  # options it was not written for: an estimate, not an error
        return DEFAULT_ITERATION_S
