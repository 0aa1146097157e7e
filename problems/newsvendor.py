"""The continuous newsvendor as BoRisk carries it (Cakmak, Astudillo, Frazier & Zhou, NeurIPS 2020;
adopted there from SimOpt), and the problem ``newsvendor-1-2``: the suite's one problem whose
observations are simulations, with an exact noise-free objective and so an exact regret.

Source: ``saitcakmak/BoRisk``, ``BoRisk/test_functions/cont_newsvendor.py`` (``ContinuousNewsvendor``:
the prices, the demand distribution, the ranges of its parameters, the 10-day run) and its early
newsvendor runner (CVaR at 0.9, 50 iterations; the problem is in none of the paper's plotted
experiments). The numbers are carried over; the code is written here.

BoRisk's simulation, on X in [0, 1]^3 = (x, u1, u2): an order quantity x (cost 5 a unit, sold at 9,
salvaged at 1), Burr XII demands D with shape parameters c = 1 + 2 u1 and k = 10 + 20 u2 (survival
function P(D > d) = (1 + d^c)^-k, drawn by inversion, D = (U^(-1/k) - 1)^(1/c) with U uniform), and
the daily profit 9 min(D, x) + (x - min(D, x)) - 5 x = 8 min(D, x) - 4 x averaged over 10 days of
independent demand; BoRisk returns minus that average and minimizes the risk of it over W = (u1, u2),
uniform on [0, 1]^2, at alpha 0.9 (its upper 10 % are the bad outcomes). It has no noise-free
evaluation.

How that maps onto this project (maximize the lower tail of f):

* x = the order quantity, z = (u1, u2) uniform on [0, 1]^2 (:class:`problems.distributions.UniformZ`),
  alpha = 0.1 = 1 - 0.9;
* the observation is the simulation (:attr:`problems.base.Problem.simulator`): the mean profit of
  10 days, each day's U = Phi(n) for one standard normal draw n of the cell's observation stream
  (10 draws an observation, :attr:`problems.base.Problem.noise_draws`), so every algorithm of a seed
  sees the same demands (BoRisk reseeds torch at each call, or not at all);
* f is the expected daily profit, exactly: E[min(D, x)] = int_0^x (1 + t^c)^-k dt, which the
  substitution s = t^c / (1 + t^c) turns into a regularized incomplete beta function,
  (1 / c) B(1/c, k - 1/c) I_s(1/c, k - 1/c) at s = x^c / (1 + x^c) (``scipy.special.betainc``), so
  f(x, z) = 8 int_0^x (1 + t^c)^-k dt - 4 x. The profit-maximizing order at a known z is the critical
  fractile, P(D > x) = (9 - 5) / (9 - 1) = 1/2: x*(z) = (2^(1/k) - 1)^(1/c). The simulation's
  standard deviation is about 0.1 (0.12 measured at x = 0.15, z = (0.3, 0.6)), against f's range
  of about 0.3 over the orders that matter; ``noise_std`` is 0 because no Gaussian noise is added;
* the initial design and budget: BoRisk's runner's 50 iterations; its initial design has 2 d + 2 =
  8 points (d = d_x + d_z), the problem's own 6 (2 d, a choice of this project's that its
  published cells keep): the suite runs BoRisk's 8 by its cells' ``n_init``.

The risk measures of f under Z are those of any problem with a 2-D continuous Z (quadrature in the
probability scale, :meth:`problems.base.Problem.var`), on :data:`QUADRATURE_NODES` nodes per axis:
f is smooth in z. ``tests/problems/test_newsvendor.py`` checks f against ``scipy.integrate.quad``
(to 1e-13) and the simulation's mean against f, and the quadrature against one four times as fine
(VaR within 3e-7, CVaR within 1e-8).

The stored optima (``problems/optima.json``: the grid-and-zoom search of a 1-D x under a 2-D
continuous Z): CVaR* = 0.085220 at x = 0.04606, VaR* = 0.124630 at 0.06397, the worst case 0.041211
at 0.02337, the mean 0.368517 at 0.18258. BoRisk stores none (its ``_optimizers`` is "given by a
formula in notes for given alpha beta", i.e. the critical fractile at a known z).
"""

from __future__ import annotations

import numpy as np
import scipy.special
import torch
from torch import Tensor

from problems.base import Problem, registered
from problems.distributions import UniformZ

#: Prices: cost, selling price, salvage value (per unit).
COST, PRICE, SALVAGE = 5.0, 9.0, 1.0
#: Ranges of the Burr XII shape parameters: c = C_LOW + C_SPAN u1, k = K_LOW + K_SPAN u2.
C_LOW, C_SPAN, K_LOW, K_SPAN = 1.0, 2.0, 10.0, 20.0
#: Days of demand an observation averages (BoRisk's ``run_length``).
DAYS = 10
#: BoRisk's risk level of minus the profit (minimized, upper tail).
BORISK_ALPHA = 0.9
#: Quadrature nodes per axis of the true risk measures (f is smooth in z; see the tests).
QUADRATURE_NODES = 129

#: Where ``newsvendor-1-2`` comes from, and how it differs (see the module docstring).
SOURCE = ("`saitcakmak/BoRisk` (no license stated; read only), `BoRisk/test_functions/cont_newsvendor.py` "
          "`ContinuousNewsvendor` and its early newsvendor runner; Cakmak, Astudillo, Frazier & Zhou, "
          '"Bayesian Optimization of Risk Measures", NeurIPS 2020, adopted there from SimOpt (in none of '
          "its plotted experiments)")
DEVIATIONS = (
    "f is the exact expected daily profit (an incomplete beta function), maximized at alpha 0.1, where "
    "BoRisk has no noise-free f and minimizes minus the simulated profit at 0.9.",
    "An observation's 10 days of demand come from the cell's standard normal draws (U = Phi(n)), the same "
    "for every method of a seed, where BoRisk reseeds torch at each call or not at all.",
    "The problem's own initial design has 6 points (2 (d_x + d_z), this project's choice, kept for the "
    "cells published with it), where BoRisk's runner starts from 2 d + 2 = 8, which the suite runs (its "
    "cells' n_init).",
    "Its optimum is this project's search (BoRisk stores none, its `_optimizers` pointing to a formula "
    "for a known z).",
)


def burr_parameters(z: Tensor) -> tuple[Tensor, Tensor]:
    """c and k of the demand for ``... x 2`` unit-scaled z; each ``...``."""
    return C_LOW + C_SPAN * z[..., 0], K_LOW + K_SPAN * z[..., 1]


def expected_sales(x: Tensor, c: Tensor, k: Tensor) -> Tensor:
    """E[min(D, x)] = int_0^x (1 + t^c)^-k dt for broadcastable x, c, k (float64), exactly, by the
    regularized incomplete beta function (module docstring)."""
    x, c, k = torch.broadcast_tensors(x, c, k)
    xc = x.clamp_min(0.0) ** c
    s = (xc / (1.0 + xc)).numpy(force=True)
    a, b = (1.0 / c).numpy(force=True), (k - 1.0 / c).numpy(force=True)
    value = scipy.special.beta(a, b) * scipy.special.betainc(a, b, s) * a  # a = 1 / c
    return torch.from_numpy(np.ascontiguousarray(value)).to(x)


def objective(xz: Tensor) -> Tensor:
    """f = the expected daily profit, ``... x 3`` (x, u1, u2) -> ``...``."""
    c, k = burr_parameters(xz[..., 1:])
    x = xz[..., 0]
    return (PRICE - SALVAGE) * expected_sales(x, c, k) - (COST - SALVAGE) * x


def simulate(xz: Tensor, normals: Tensor) -> Tensor:
    """The observed mean profit of :data:`DAYS` days: ``batch x 3`` inputs, ``batch x DAYS``
    standard normal draws (one a day) -> ``batch``."""
    c, k = burr_parameters(xz[..., 1:])
    x = xz[..., 0]
    u = torch.special.ndtr(normals).clamp_min(torch.finfo(torch.float64).tiny)
    demand = (u ** (-1.0 / k[..., None]) - 1.0) ** (1.0 / c[..., None])  # batch x DAYS
    sales = torch.minimum(demand, x[..., None])
    profit = PRICE * sales + SALVAGE * (x[..., None] - sales) - COST * x[..., None]
    return profit.mean(dim=-1)


def critical_fractile(z: Tensor) -> Tensor:
    """The profit-maximizing order at a known z (``... x 2`` -> ``...``): P(D > x) = 1/2."""
    c, k = burr_parameters(z)
    return (2.0 ** (1.0 / k) - 1.0) ** (1.0 / c)


@registered
def newsvendor_problem() -> Problem:
    """``newsvendor-1-2``: x the order in [0, 1], Z = the demand's two shape parameters uniform on
    [0, 1]^2, alpha 0.1 (BoRisk's 0.9 of minus the profit), observations simulated (see the module
    docstring)."""
    return Problem(
        name="newsvendor-1-2",
        d_x=1,
        d_z=2,
        z=UniformZ(2),
        alpha=round(1.0 - BORISK_ALPHA, 12),
        noise_std=0.0,
        n_init=6,
        iterations=50,
        objective=objective,
        description="continuous newsvendor (BoRisk, from SimOpt): f = expected daily profit, Z the "
                    "Burr XII demand's shapes; observations a 10-day simulation; alpha 0.1 = BoRisk's 0.9",
        quadrature_nodes=QUADRATURE_NODES,
        simulator=simulate,
        noise_draws=DAYS,
        source=SOURCE,
        deviations=DEVIATIONS,
    )
