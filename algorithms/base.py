"""The algorithm interface: ``propose`` the next query (x, z), ``recommend`` an x.

An algorithm is built for one problem and one run; the loop that drives it (``harness.cell``) owns
the data and the GP (from :mod:`algorithms.gp`), so every method sees the same model, fitted on the
same schedule.

Random streams, both derived from the run's seed root (itself derived from (problem, seed)):

* ``search_seed(t)``: shared by every algorithm (common random numbers): the quasi-random points
  that start the search for x_t. V-UCB at alpha below the smallest mass and StableOpt therefore run
  the very same search and pick identical queries (Corollary 2).
* ``choice_generator(t)``: also shared, for choosing z_t among equally good candidates (V-UCB Unif
  among lacing values, StableOpt among exact minimizers of l), so the two limits agree even on ties;
* ``self.rng``: the algorithm's own stream (``derive_seed(seed_root, name)``), e.g. random search's
  draws.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import torch
from botorch.models import SingleTaskGP
from torch import Tensor

from problems import Problem
from problems.seeding import derive_seed, generator


def positive_int(owner: str, name: str, value: object) -> int:
    """``value`` if it is an int >= 1 (not a bool, not a float such as 2.0), else a one-line
    ``ValueError`` naming ``owner`` and the option: options are checked before any cell runs."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{owner}: {name} must be a positive integer, got {value!r}")
    return value


def positive_float(owner: str, name: str, value: object, allow_zero: bool = False) -> float:
    """``value`` as a float if it is a finite number > 0 (>= 0 with ``allow_zero``; not a bool, a
    string or infinity), else a one-line ``ValueError`` naming ``owner`` and the option."""
    ok = (not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)
          and (value >= 0 if allow_zero else value > 0))
    if not ok:
        kind = "a finite number >= 0" if allow_zero else "a positive finite number"
        raise ValueError(f"{owner}: {name} must be {kind}, got {value!r}")
    return float(value)


@dataclass
class Proposal:
    """The next query.

    Attributes:
        x: ``d_x`` decision, in [0, 1].
        z: ``d_z`` environment value.
        info: per-iteration diagnostics stored in the results row (``beta``, ``lv_count``,
            ``var_lower``: VaR_alpha(l_{t-1}(x_t, Z)), used for the theory's recommendation).
    """

    x: Tensor
    z: Tensor
    info: dict[str, float | int | None] = field(default_factory=dict)


@dataclass
class Recommendation:
    """The recommended x (``d_x``) with diagnostics (e.g. its estimated VaR)."""

    x: Tensor
    info: dict[str, float | int | None] = field(default_factory=dict)


class Algorithm(ABC):
    """Base class. Subclasses set ``name`` and implement :meth:`propose` and :meth:`recommend`.

    Args:
        problem: the problem (its Z, alpha and dimensions are all an algorithm may use; never f).
        seed_root: the run's root seed, see the module docstring.
        **options: algorithm settings; unknown names raise ``TypeError``.
    """

    name: ClassVar[str]
    #: The kinds of Z the algorithm handles ("discrete", "continuous"); see :func:`supports`.
    z_kinds: ClassVar[frozenset[str]] = frozenset({"discrete", "continuous"})

    def __init__(self, problem: Problem, seed_root: int, **options: object) -> None:
        if options:
            raise TypeError(f"{self.name}: unknown option(s) {', '.join(sorted(options))}")
        self.problem = problem
        self.seed_root = seed_root
        self.rng = generator(seed_root, self.name)

    def state_dict(self) -> dict:
        """Everything the algorithm carries from one iteration to the next (for checkpoints): the
        state of its own stream. A subclass with more state extends both methods; a test resumes
        every registered algorithm mid-run and compares with an uninterrupted run."""
        return {"rng": self.rng.get_state()}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.rng.set_state(state["rng"])

    def search_seed(self, t: int) -> int:
        """Seed of the x-search at iteration ``t``, common to every algorithm of the run."""
        return derive_seed(self.seed_root, "x-search", t)

    def choice_generator(self, t: int) -> torch.Generator:
        """Generator for choosing z_t among tied candidates at iteration ``t`` (shared)."""
        return generator(self.seed_root, "z-choice", t)

    @abstractmethod
    def propose(self, model: SingleTaskGP, t: int) -> Proposal:
        """The query of iteration ``t`` (1-based) given the model of the data up to t - 1."""

    @abstractmethod
    def recommend(self, model: SingleTaskGP, train_X: Tensor) -> Recommendation:
        """The recommended x given the model and the ``n x (d_x + d_z)`` queries so far."""

    def acquisition_function(self, model: SingleTaskGP, t: int) -> Callable[[Tensor], Tensor] | None:
        """The function the inner search of iteration ``t`` maximizes, built once (its per-iteration
        setup done) and then evaluated on batches: ``b x q`` candidates -> ``b`` values, where a
        candidate is what the search moves (x for V-UCB and StableOpt, (x, w) for rho-KG^apx).

        Optional: the complexity study times it to measure the cost of one evaluation apart from
        the number of evaluations a search makes. None (the default) for a method without one
        explicit function of the candidates (random search; LNSO, which trains networks instead).
        """
        return None

    def observed_x(self, train_X: Tensor) -> Tensor:
        """The distinct x among the queries, ``k x d_x``, in order of first appearance."""
        xs = train_X[:, : self.problem.d_x]
        _, inverse = torch.unique(xs, dim=0, return_inverse=True)
        first = torch.full((int(inverse.max()) + 1,), xs.shape[0], dtype=torch.long)
        first = first.scatter_reduce(0, inverse, torch.arange(xs.shape[0]), reduce="amin")
        return xs[first.sort().values]


def supports(factory: object, problem: Problem) -> bool:
    """Whether an algorithm factory (a registry value) handles ``problem``'s kind of Z.

    A factory that declares no ``z_kinds`` is assumed to handle both; building it on a problem it
    cannot handle still raises a one-line ``ValueError``.
    """
    kinds = getattr(factory, "z_kinds", frozenset({"discrete", "continuous"}))
    return ("discrete" if problem.z.is_discrete else "continuous") in kinds

