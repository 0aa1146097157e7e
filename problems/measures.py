"""Risk measures as objects: VaR, CVaR and the worst case, each one class that owns what the rest of
the project asks of a risk measure.

A :class:`RiskMeasure` knows

* its ``name`` (the ``--risk`` value, the ``target`` column of the rows, the key of an optimum),
  its ``label`` for people and the ``column`` of the rows that holds the true value of the
  recommendation (``var_rec``, ``cvar_rec``, ``worst_rec``);
* its exact value on a weighted discrete distribution (:meth:`RiskMeasure.of_distribution`, batched,
  what V-UCB, CV-UCB and rho-KG^apx compute on a model's values at the support) and on a problem at x
  (:meth:`RiskMeasure.of_problem`: the truth a regret is measured with);
* the function of x its certified optimum search maximizes (:meth:`RiskMeasure.objective`) and where
  a problem's :class:`~problems.base.Optimum` keeps that optimum (:meth:`RiskMeasure.optimum`);
* whether below the smallest mass of a discrete Z it *is* the worst case
  (:attr:`RiskMeasure.worst_case_below_smallest_mass`: VaR and CVaR at such an alpha are the minimum
  over the support, so their cells are scored against the worst case).

Algorithms declare which measures they optimize by name (``Algorithm.risks``); the registry
:data:`RISK_MEASURES` is the one list of names, and :func:`risk_measure` the one lookup.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar, Protocol

import torch
from torch import Tensor

from problems.risk import var_index, weighted_cvar, weighted_var


class Problem(Protocol):
    """What a measure asks of a :class:`problems.base.Problem` (which imports this module, so it is
    named here by what it does): the true measures of f(x, Z) at x."""

    def var(self, x: Tensor, alpha: float | None = None) -> Tensor: ...

    def cvar(self, x: Tensor, alpha: float | None = None) -> Tensor: ...

    def worst_case(self, x: Tensor) -> Tensor: ...

    def mean(self, x: Tensor, alpha: float | None = None) -> Tensor: ...


#: A :class:`problems.base.Optimum`: the measures' optima are its attributes ``NAME`` and
#: ``argmax_NAME``.
Optimum = object


class RiskMeasure(ABC):
    """One risk measure of f(x, Z), to be maximized over x. Subclasses set the class attributes and
    implement :meth:`of_distribution` and :meth:`of_problem`."""

    #: The measure's name: ``--risk``, the rows' ``target``, the key of its optimum.
    name: ClassVar[str]
    #: How people call it, e.g. ``"VaR"``.
    label: ClassVar[str]
    #: The column of the rows holding the true value of the recommendation.
    column: ClassVar[str]
    #: Below the smallest mass of a discrete Z the measure equals the minimum over the support.
    worst_case_below_smallest_mass: ClassVar[bool] = False
    #: A cell can be asked to optimize it (``--risk``); the worst case is StableOpt's target only.
    selectable: ClassVar[bool] = True
    #: The measure is the minimum of expectations over a set of weights (CVaR, the worst case, the
    #: mean; not VaR), attained at :meth:`weights`: so it is superadditive and positively
    #: homogeneous, and rho(a + b) <= weights(a) . (a + b), which rho-KG^apx's pruning uses.
    coherent: ClassVar[bool] = False

    @abstractmethod
    def of_distribution(self, values: Tensor, masses: Tensor, alpha: float) -> Tensor:
        """The measure of the distribution taking ``values[..., i]`` with probability
        ``masses[..., i]``: ``batch x n`` (masses ``n`` or ``batch x n``) -> ``batch``; exact."""

    @abstractmethod
    def of_problem(self, problem: Problem, x: Tensor, alpha: float | None = None) -> Tensor:
        """The true measure of f(x, Z) on ``problem`` (alpha defaults to the problem's):
        ``batch x d_x`` -> ``batch``."""

    @abstractmethod
    def weights(self, values: Tensor, masses: Tensor, alpha: float) -> Tensor:
        """The measure of the distribution taking ``values[..., i]`` with probability ``masses[i]``
        as a weighted sum of the values: ``batch x n`` (masses ``n``) -> ``batch x n`` weights,
        chosen without gradient, such that the measure is ``(weights * values).sum(-1)`` and its
        gradient in the values is the weights (almost everywhere). Each measure here is piecewise
        linear in the values, which is what makes this exact."""

    def objective(self, problem: Problem, alpha: float) -> Callable[[Tensor], Tensor]:
        """The function of x the certified search of this measure's optimum maximizes."""
        return lambda x: self.of_problem(problem, x, alpha)

    def optimum(self, optimum: Optimum) -> float | None:
        """The value of this measure's optimum in ``optimum`` (None where unknown)."""
        return getattr(optimum, self.name, None)

    def argmax(self, optimum: Optimum) -> tuple[float, ...] | None:
        """A maximizer of this measure kept in ``optimum`` (None where unknown)."""
        return getattr(optimum, f"argmax_{self.name}", None)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class VaR(RiskMeasure):
    """Value-at-Risk: the lower alpha-quantile, inf{w : P(f(x, Z) <= w) >= alpha} (the paper's)."""

    name, label, column = "var", "VaR", "var_rec"
    worst_case_below_smallest_mass = True

    def of_distribution(self, values: Tensor, masses: Tensor, alpha: float) -> Tensor:
        return weighted_var(values, masses, alpha)

    def weights(self, values: Tensor, masses: Tensor, alpha: float) -> Tensor:
        """One at the quantile's entry (:func:`problems.risk.var_index`), zero elsewhere."""
        index = var_index(values.detach(), masses, alpha).unsqueeze(-1)
        return torch.zeros_like(values).scatter_(-1, index, 1.0)

    def of_problem(self, problem: Problem, x: Tensor, alpha: float | None = None) -> Tensor:
        return problem.var(x, alpha)


class CVaR(RiskMeasure):
    """Conditional Value-at-Risk: the lower-tail mean (1 / alpha) int_0^alpha VaR_u du."""

    name, label, column = "cvar", "CVaR", "cvar_rec"
    worst_case_below_smallest_mass = True
    coherent = True

    def of_distribution(self, values: Tensor, masses: Tensor, alpha: float) -> Tensor:
        return weighted_cvar(values, masses, alpha)

    def weights(self, values: Tensor, masses: Tensor, alpha: float) -> Tensor:
        """p_i / alpha on the values below VaR_alpha, and the rest of the tail's weight,
        (alpha - sum of those p_i) / alpha, on VaR's own entry: the sorted formula of
        :func:`problems.risk.weighted_cvar` without its sort (values equal to VaR weigh the same
        either way)."""
        values = values.detach()
        index = var_index(values, masses, alpha).unsqueeze(-1)
        below = values < torch.gather(values, -1, index)
        weights = torch.where(below, masses / alpha, torch.zeros((), dtype=values.dtype))
        return weights.scatter_add_(-1, index, 1.0 - weights.sum(dim=-1, keepdim=True))

    def of_problem(self, problem: Problem, x: Tensor, alpha: float | None = None) -> Tensor:
        return problem.cvar(x, alpha)


class WorstCase(RiskMeasure):
    """The worst case min_{z in support} f(x, z): StableOpt's target, VaR's alpha -> 0 limit."""

    name, label, column = "worst_case", "worst case", "worst_rec"
    selectable = False
    coherent = True

    def of_distribution(self, values: Tensor, masses: Tensor, alpha: float) -> Tensor:
        inside = masses.expand_as(values) > 0  # a value of no mass is not in the support
        return values.masked_fill(~inside, float("inf")).amin(dim=-1)

    def weights(self, values: Tensor, masses: Tensor, alpha: float) -> Tensor:
        """One at the smallest value of positive mass, zero elsewhere."""
        inside = masses.expand_as(values) > 0
        index = values.detach().masked_fill(~inside, float("inf")).argmin(dim=-1, keepdim=True)
        return torch.zeros_like(values).scatter_(-1, index, 1.0)

    def of_problem(self, problem: Problem, x: Tensor, alpha: float | None = None) -> Tensor:
        return problem.worst_case(x)


class Mean(RiskMeasure):
    """The risk-neutral expectation E_Z[f(x, Z)]: what plain BO under an uncertain Z maximizes
    (``--risk mean``); alpha plays no part."""

    name, label, column = "mean", "mean", "mean_rec"
    coherent = True

    def of_distribution(self, values: Tensor, masses: Tensor, alpha: float) -> Tensor:
        return (values * masses).sum(dim=-1)

    def weights(self, values: Tensor, masses: Tensor, alpha: float) -> Tensor:
        """The masses."""
        return masses.to(values).expand_as(values).clone()

    def of_problem(self, problem: Problem, x: Tensor, alpha: float | None = None) -> Tensor:
        return problem.mean(x)


#: The worst case, which every cell scores and StableOpt targets.
WORST_CASE = WorstCase()
#: Every risk measure by name: adding one is a class and an entry here.
RISK_MEASURES: dict[str, RiskMeasure] = {m.name: m for m in (VaR(), CVaR(), WORST_CASE, Mean())}
#: The measures a cell can optimize (``--risk``, a grid's ``risk``), the default first.
RISKS: tuple[str, ...] = tuple(name for name, m in RISK_MEASURES.items() if m.selectable)
DEFAULT_RISK = "var"


def risk_measure(name: str) -> RiskMeasure:
    """The measure called ``name``; a one-line ``ValueError`` naming the valid ones otherwise."""
    try:
        return RISK_MEASURES[name]
    except KeyError:
        raise ValueError(f"unknown risk measure {name!r}; valid: {', '.join(RISK_MEASURES)}") from None
