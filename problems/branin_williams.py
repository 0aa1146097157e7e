"""Branin-Williams (Williams, Santner & Notz 2000) as BoRisk's rho-KG paper uses it (Cakmak, Astudillo,
Frazier & Zhou, NeurIPS 2020), and the problem ``branin-williams-2-2``.

Source: ``saitcakmak/BoRisk``, ``BoRisk/test_functions/branin_williams.py`` (the function, its 12
environmental points and their weights) and ``runner_files/bw-runner-*.py`` (noise, alpha, budgets).
The numbers are carried over; the code is written here.

BoRisk's function, on X in [0, 1]^4 with x = (X1, X2) the decision and w = (X3, X4) the environment,
is the product of two Branin functions b(u, v) = (v - 5.1 u^2 / (4 pi^2) + 5 u / pi - 6)^2
+ 10 (1 - 1 / (8 pi)) cos(u) + 10 on [-5, 10] x [0, 15]::

    F(x, w) = b(15 X1 - 5, 15 X3) * b(15 X4 - 5, 15 X2)

W takes the 12 points {0.2, 0.4, 0.6, 0.8} x {0.25, 0.5, 0.75} with the product masses of
(0.15, 0.35, 0.35, 0.15) and (0.25, 0.5, 0.25). BoRisk observes F with N(0, 10^2) noise and
*minimizes* rho[F(x, W)] with rho its VaR or CVaR at alpha = 0.7: the upper 30 % of F are the bad
outcomes.

How that maps onto this project (maximize the lower tail of f):

* f(x, z) = -F(x, z), unscaled (so a value here is minus BoRisk's), z = w, noise std 10;
* alpha = 0.3 = 1 - 0.7: VaR_0.3(f) is minus the upper 0.7-quantile of F, CVaR_0.3(f) minus the mean
  of F over its upper 30 % (the Rockafellar-Uryasev tail mean).
* Where they differ from BoRisk's numbers (``BoRisk/acquisition/inner_rho.py``): BoRisk's VaR is the
  *lower* 0.7-quantile of F (the first sorted value whose cumulative weight reaches 0.7). Both agree
  unless the weights of the values below some value sum to exactly 0.7 (BoRisk's weights are
  multiples of 0.0125), where BoRisk would take the largest value of the lower 70 % and this project
  (minus) the smallest of the upper 30 %; F being a product of a function of w1 and one of w2, no
  x of a 401 x 401 grid nor 4000 random ones lands there, so on this problem the two VaRs agree.
  BoRisk's CVaR is the weight-renormalized mean of F over every value from its VaR up, the VaR's
  whole weight included: it averages over more than the upper 30 % (by the part of the VaR's weight
  below 0.7), so it is at most the tail mean, and equal only where that part's values equal the
  tail's. This project keeps the coherent tail mean. ``tests/problems/test_branin_williams.py``
  writes BoRisk's two formulas again and checks where they agree and by how much they may not.
* The initial design: BoRisk's 72 points (6 x times the 12 w in one of its runner versions; 72
  random (x, w) in the other), here 72 points with z drawn uniformly over the 12 (as BoRisk's newer
  runners do); the budget: 120 iterations of one evaluation (its rho-KG^apx runs).

BoRisk stores no optimum; this project's are searched as every problem's (``problems/optima.json``):
VaR -178.534, CVaR -722.663.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from problems.base import Problem, registered
from problems.distributions import DiscreteZ

#: BoRisk's environmental points (X3, X4), in its file's order.
W_POINTS = ((0.2, 0.25), (0.4, 0.25), (0.6, 0.25), (0.8, 0.25),
            (0.2, 0.5), (0.4, 0.5), (0.6, 0.5), (0.8, 0.5),
            (0.2, 0.75), (0.4, 0.75), (0.6, 0.75), (0.8, 0.75))
#: Their weights, in the same order: the products of the two marginals below.
W_WEIGHTS = (0.0375, 0.0875, 0.0875, 0.0375, 0.075, 0.175, 0.175, 0.075, 0.0375, 0.0875, 0.0875, 0.0375)
#: BoRisk's risk level of F (minimized, upper tail) and the observation noise of its runners.
BORISK_ALPHA = 0.7
NOISE_STD = 10.0

#: Where ``branin-williams-2-2`` comes from, and how it differs (see the module docstring).
SOURCE = ("`saitcakmak/BoRisk` (no license stated; read only), `BoRisk/test_functions/branin_williams.py` "
          "and `runner_files/bw-runner-*.py`; Cakmak, Astudillo, Frazier & Zhou, \"Bayesian Optimization of "
          "Risk Measures\", NeurIPS 2020; the function of Williams, Santner & Notz (2000)")
DEVIATIONS = (
    "f = -F unscaled, maximized at alpha 0.3: a value here is minus BoRisk's, whose F is minimized at 0.7.",
    "VaR is minus the smallest of F's upper 30 %, where BoRisk takes the largest of its lower 70 % (they "
    "differ only where weights below a value sum to exactly 0.7, which no tested x reaches).",
    "CVaR is the tail mean, at least BoRisk's renormalized mean from its VaR up with the VaR's whole "
    "weight.",
    "The initial design is 72 points with z drawn uniformly over the 12, as BoRisk's newer runners (an "
    "older one takes 6 x times the 12 w).",
    "Its optimum is this project's search (BoRisk stores none).",
)


def branin(u: Tensor, v: Tensor) -> Tensor:
    """The Branin function on its own domain [-5, 10] x [0, 15], elementwise."""
    a = v - 5.1 / (4.0 * math.pi**2) * u**2 + 5.0 / math.pi * u - 6.0
    return a**2 + 10.0 * (1.0 - 1.0 / (8.0 * math.pi)) * torch.cos(u) + 10.0


def branin_williams(xz: Tensor) -> Tensor:
    """BoRisk's F on ``... x 4`` inputs (x1, x2, w1, w2) in [0, 1]^4; returns ``...``."""
    first = branin(15.0 * xz[..., 0] - 5.0, 15.0 * xz[..., 2])
    second = branin(15.0 * xz[..., 3] - 5.0, 15.0 * xz[..., 1])
    return first * second


def objective(xz: Tensor) -> Tensor:
    """f = -F: this project maximizes."""
    return -branin_williams(xz)


@registered
def branin_williams_problem() -> Problem:
    """``branin-williams-2-2``: x in [0, 1]^2, Z BoRisk's 12 weighted points, alpha 0.3 (BoRisk's 0.7
    of a minimized F), noise std 10 (see the module docstring)."""
    z = DiscreteZ(torch.tensor(W_POINTS, dtype=torch.float64), torch.tensor(W_WEIGHTS, dtype=torch.float64))
    return Problem(
        name="branin-williams-2-2",
        d_x=2,
        d_z=2,
        z=z,
        alpha=round(1.0 - BORISK_ALPHA, 12),
        noise_std=NOISE_STD,
        n_init=72,
        iterations=120,
        objective=objective,
        description="Branin-Williams (BoRisk, NeurIPS 2020): f = -F, F the product of two Branin "
                    "functions; Z BoRisk's 12 weighted points; alpha 0.3 = BoRisk's 0.7 of a minimized F",
        source=SOURCE,
        deviations=DEVIATIONS,
    )
