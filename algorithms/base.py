"""The algorithm interface: ``propose`` the next query (x, z), ``recommend`` an x.

An algorithm is built for one problem and one run; the loop that drives it
(:class:`algorithms.loop.BOLoop`, under both ``harness.cell`` and :class:`algorithms.VaROptimizer`)
owns the data and the GP (from :mod:`algorithms.gp`), so every method sees the same model, fitted on
the same schedule.

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

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import torch
from botorch.models import SingleTaskGP
from torch import Tensor

from algorithms.recommend import risk_of_mean
from problems import Problem
from problems.checks import positive_float, positive_int
from problems.measures import DEFAULT_RISK, RISKS, RiskMeasure
from problems.seeding import derive_seed, generator

__all__ = ["RISKS", "Z_KINDS", "Algorithm", "Proposal", "Recommendation", "build_algorithm",
           "check_algorithm", "positive_float", "positive_int", "supports", "z_kind"]


@dataclass
class Proposal:
    """The next query.

    Attributes:
        x: ``d_x`` decision, in [0, 1].
        z: ``d_z`` environment value; None from a z-blind algorithm (``chooses_z = False``), whose
            z the loop draws from Z.
        info: per-iteration diagnostics, stored whole in the row's ``info`` column (JSON); four
            keys also have columns of their own (``beta``, ``lv_count``, ``var_upper``,
            ``var_lower``). No key changes how the runner computes a row.
        lower_bound: a lower confidence bound on the algorithm's target at ``x`` (V-UCB:
            VaR_alpha(l_{t-1}(x_t, Z))), or None. The runner's theory recommendation is the x_t of
            the largest one so far (the paper's x_{t*}); an algorithm without bounds leaves it None.
    """

    x: Tensor
    z: Tensor | None
    info: dict[str, float | int | None] = field(default_factory=dict)
    lower_bound: float | None = None


@dataclass
class Recommendation:
    """The recommended x (``d_x``) with diagnostics (e.g. its estimated VaR)."""

    x: Tensor
    info: dict[str, float | int | None] = field(default_factory=dict)


class Algorithm(ABC):
    """Base class. Subclasses set ``name``, declare their ``source`` and ``deviations``, and implement
    :meth:`propose` and :meth:`recommend`.

    Args:
        problem: the problem (its Z, alpha and dimensions are all an algorithm may use; never f).
        seed_root: the run's root seed, see the module docstring.
        risk: the risk measure to optimize, one of the class's :attr:`risks` (``ValueError``
            otherwise). :func:`build_algorithm` passes it only when it is not ``"var"``, so a
            subclass that optimizes VaR alone need not take it.
        **options: algorithm settings; unknown names raise ``TypeError``.
    """

    name: ClassVar[str]
    #: The kinds of Z the algorithm handles ("discrete", "continuous"); the runner refuses any other
    #: before any work (:func:`build_algorithm`).
    z_kinds: ClassVar[frozenset[str]] = frozenset({"discrete", "continuous"})
    #: The risk measure the run's regret is measured against: None for the cell's own (VaR_alpha, or
    #: CVaR_alpha in a cell with ``risk = "cvar"``), or a measure of :mod:`problems.measures` that
    #: the method targets whatever the cell's (StableOpt: ``WORST_CASE``, max_x min_z f).
    target: ClassVar[RiskMeasure | None] = None
    #: The risk measures the algorithm optimizes (:data:`RISKS`): a cell with another risk measure
    #: is refused before any work (:func:`build_algorithm`). The instance's is ``self.risk``.
    risks: ClassVar[frozenset[str]] = frozenset({"var"})
    #: What the candidates of :meth:`acquisition_function` are: ``"x"`` (``d_x`` columns) or
    #: ``"xz"`` (``d_x + d_z``: x and a value of Z, as rho-KG^apx's (x, w)). The complexity study
    #: draws its batch of candidates from it.
    candidates: ClassVar[str] = "x"
    #: How many candidates the complexity study evaluates the acquisition function on at once.
    evaluation_batch: ClassVar[int] = 256
    #: The options that set how many samples of a continuous Z the algorithm draws per estimate:
    #: the complexity study sets them all to its ``|Dz|`` (empty: the algorithm cannot be timed on
    #: a continuous Z at a chosen ``|Dz|``).
    z_sample_options: ClassVar[tuple[str, ...]] = ()
    #: Dataclasses whose fields are further options, which ``__init__`` takes as ``**kwargs``, by
    #: the kind of Z they apply to (V-UCB's LNSO settings on a continuous Z). Read only by
    #: :func:`algorithms.options.describe_options` (``--describe``); empty: ``**kwargs`` of
    #: ``__init__``, if any, are passed on to the parent class.
    option_settings: ClassVar[dict[str, tuple[type, ...]]] = {}
    #: Whether the algorithm chooses z (the default) or only x. A z-blind method (RAHBO) proposes
    #: x with ``z = None``; the loop draws every z it evaluates from Z's distribution, on a stream
    #: of the run's own (:func:`algorithms.loop.z_blind_draw`), the initial design's included, and
    #: every evaluation counts against the budget as any other.
    chooses_z: ClassVar[bool] = True
    #: Where the method comes from, one line: the repository (with its commit where known) and
    #: file(s), and the paper. The study pages' table of sources shows it (``analysis/sources.py``);
    #: "" declares nothing, which the table says.
    source: ClassVar[str] = ""
    #: Every way this implementation differs from its source, one short sentence each, naming the
    #: option that reproduces the source where there is one; empty only where there is none. A
    #: variant class may extend its parent's tuple.
    deviations: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def proposal_cost(cls, z_kind: str) -> tuple[float, float, float, float]:
        """Rough single-core seconds of one proposal on a Z of kind ``z_kind``, as (fixed seconds,
        seconds at ``|D| = 40`` and ``|Dz| = 64``, exponent in ``|D|``, exponent in ``|Dz|``). It sizes the
        complexity study and its ETA; it is not a result. The default is a middling guess."""
        return (0.1, 0.5, 1.0, 1.0)

    @classmethod
    def reduced_options(cls, z_kind: str) -> dict | None:
        """Options of a reduced search effort on a Z of kind ``z_kind`` (the estimators unchanged),
        for grids that must run fast (the smoke grid, a study's quick grid: see
        :func:`harness.grid.smoke_options`); None (the default) where the defaults are cheap enough."""
        return None

    def __init__(self, problem: Problem, seed_root: int, risk: str = "var", **options: object) -> None:
        if options:
            raise TypeError(f"{self.name}: unknown option(s) {', '.join(sorted(options))}")
        if risk not in self.risks:
            raise ValueError(f"{self.name} optimizes {' or '.join(sorted(self.risks))} only, not {risk!r}")
        self.risk = risk
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

    def observe(self, train_X: Tensor, train_Y: Tensor) -> None:
        """Every observation so far (``n x (d_x + d_z)`` queries and ``n x 1`` outcomes), given by
        the loop before each proposal and recommendation: for a method that models the data its own
        way (RAHBO's models of the mean and the variance at each x). The default ignores it."""
        return None

    def recommend(self, model: SingleTaskGP, train_X: Tensor) -> Recommendation:
        """The recommended x given the model and the ``n x (d_x + d_z)`` queries so far: by default
        the shared rule, the observed x whose
        model mean has the best exact value of the cell's risk measure (:mod:`algorithms.recommend`),
        that value as ``var_mean_rec``. An algorithm with a rule of its own overrides this and says
        so in its docstring."""
        xs = self.observed_x(train_X)
        values = risk_of_mean(self.problem, model, xs, self.risk)
        i = int(values.argmax())
        return Recommendation(xs[i].clone(), {"var_mean_rec": float(values[i])})

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


Z_KINDS = frozenset({"discrete", "continuous"})


#: The in-tree algorithm classes, in the order their modules are first imported (:func:`registered`).
_REGISTERED: list[type] = []


def registered(cls: type) -> type:
    """Class decorator of an in-tree algorithm: :data:`algorithms.registry.ALGORITHMS` keys it by its
    ``name`` once its module is imported (the registry's one import line names every module). A
    user's algorithm is not registered: it is named by its import path (:mod:`problems.plugins`).

    Args:
        cls: an :class:`Algorithm` subclass with its ``name``.

    Returns:
        ``cls``, unchanged.
    """
    _REGISTERED.append(cls)
    return cls


def registered_classes() -> tuple[type, ...]:
    """Every class :func:`registered` so far, in registration order."""
    return tuple(_REGISTERED)


def check_algorithm(key: str, factory: object) -> None:
    """One-line ``ValueError`` unless ``factory`` is an :class:`Algorithm` subclass whose
    declarations the runner can rely on: ``name`` equal to ``key`` (its registry key, or the
    import path it was loaded by), ``z_kinds`` a non-empty subset of {discrete, continuous},
    ``target`` None or a risk measure object, ``risks`` a non-empty subset of :data:`RISKS`,
    ``candidates`` one of ``x``, ``xz``, ``chooses_z`` a bool."""
    if not (isinstance(factory, type) and issubclass(factory, Algorithm)):
        what = f"the class {factory.__name__}" if isinstance(factory, type) else \
            f"of type {type(factory).__name__}"
        raise ValueError(f"algorithm {key!r} is {what}, not a subclass of algorithms.Algorithm")
    where = f"algorithm {key!r} ({factory.__module__}.{factory.__qualname__})"
    name = getattr(factory, "name", None)
    if not isinstance(name, str) or not name:
        suggestion = factory.__name__.lower() if ":" in key else key
        raise ValueError(f"{where} sets no class attribute name (e.g. name = {suggestion!r})")
    if name != key and not (":" in key and key.rsplit(":", 1)[-1] == factory.__name__):
        raise ValueError(f"{where} has name {name!r}, not its registry key {key!r}")
    kinds = factory.z_kinds
    if not isinstance(kinds, frozenset | set) or not kinds or not kinds <= Z_KINDS:
        raise ValueError(f"{where}: z_kinds must be a non-empty subset of {sorted(Z_KINDS)}, "
                         f"got {kinds!r}")
    if factory.target is not None and not isinstance(factory.target, RiskMeasure):
        raise ValueError(f"{where}: target must be None (the cell's risk measure) or a measure of "
                         f"problems.measures (e.g. WORST_CASE), got {factory.target!r}")
    risks = getattr(factory, "risks", frozenset({"var"}))
    if not isinstance(risks, frozenset | set) or not risks or not set(risks) <= set(RISKS):
        raise ValueError(f"{where}: risks must be a non-empty subset of {list(RISKS)}, got {risks!r}")
    if factory.candidates not in ("x", "xz"):
        raise ValueError(f"{where}: candidates must be 'x' or 'xz', got {factory.candidates!r}")
    if not isinstance(getattr(factory, "chooses_z", True), bool):
        raise ValueError(f"{where}: chooses_z must be True or False, got {factory.chooses_z!r}")


def z_kind(problem: Problem) -> str:
    """``"discrete"`` or ``"continuous"``: the kind of the problem's Z (read from Z, never from
    the problem's name)."""
    return "discrete" if problem.z.is_discrete else "continuous"


def build_algorithm(key: str, factory: object, problem: Problem, seed_root: int,
                    risk: str | None = None, **options: object) -> Algorithm:
    """``factory(problem, seed_root, **options)`` (plus ``risk=risk`` unless it is ``"var"``)
    after :func:`check_algorithm` and a check that it handles the problem's kind of Z and the risk
    measure; every refusal is a one-line ``ValueError`` raised before any work (options are the
    factory's to check: ``TypeError`` or ``ValueError``). ``risk=None``: the algorithm's own, VaR
    if it optimizes VaR (a cell always names its risk measure; the complexity study and option
    checks need not)."""
    check_algorithm(key, factory)
    if z_kind(problem) not in factory.z_kinds:
        raise ValueError(f"algorithm {key!r} handles a {' or '.join(sorted(factory.z_kinds))} Z only; "
                         f"problem {problem.name!r} has a {z_kind(problem)} one")
    risks = getattr(factory, "risks", frozenset({DEFAULT_RISK}))
    if risk is None:
        risk = DEFAULT_RISK if DEFAULT_RISK in risks else sorted(risks)[0]
    if risk not in RISKS:
        raise ValueError(f"unknown risk measure {risk!r}; valid: {', '.join(RISKS)}")
    if risk not in risks:
        raise ValueError(f"algorithm {key!r} optimizes {' or '.join(sorted(risks))} only, not {risk}")
    if risk != DEFAULT_RISK:
        return factory(problem, seed_root, risk=risk, **options)
    return factory(problem, seed_root, **options)


def supports(factory: object, problem: Problem, risk: str = "var") -> bool:
    """Whether an algorithm factory (a registry value) handles ``problem``'s kind of Z and the risk
    measure ``risk``.

    A factory that declares no ``z_kinds`` is assumed to handle both, one without ``risks`` VaR
    only; building it on a problem it cannot handle still raises a one-line ``ValueError``.
    """
    kinds = getattr(factory, "z_kinds", Z_KINDS)
    return z_kind(problem) in kinds and risk in getattr(factory, "risks", frozenset({"var"}))

