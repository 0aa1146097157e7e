"""``branin-williams-2-2`` against BoRisk's definitions, written again here: its function (two
Branin functions, their known minima), its Z, and how this project's VaR and CVaR at alpha 0.3 of
f = -F relate to BoRisk's VaR and CVaR at 0.7 of a minimized F (``BoRisk/acquisition/inner_rho.py``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from problems import PROBLEMS, build_problem

NAME = "branin-williams-2-2"
#: BoRisk's weights in units of 0.0125 (exact integers: cumulative sums compare exactly).
UNITS = np.array([3, 7, 7, 3, 6, 14, 14, 6, 3, 7, 7, 3])
SEVENTY = 56  # 0.7 in those units
BRANIN_MIN = 0.397887357729738


def branin_np(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The Branin function, from its usual parameters a = 1, b = 5.1 / (4 pi^2), c = 5 / pi, r = 6,
    s = 10, t = 1 / (8 pi)."""
    a, b, c, r, s, t = 1.0, 5.1 / (4 * math.pi**2), 5 / math.pi, 6.0, 10.0, 1 / (8 * math.pi)
    return a * (v - b * u**2 + c * u - r) ** 2 + s * (1 - t) * np.cos(u) + s


def borisk_f(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """BoRisk's F for ``n x 2`` x and ``m x 2`` w: ``n x m``."""
    x1, x2 = x[:, None, 0], x[:, None, 1]
    w1, w2 = w[None, :, 0], w[None, :, 1]
    return branin_np(15 * x1 - 5, 15 * w1) * branin_np(15 * w2 - 5, 15 * x2)


@pytest.fixture(scope="module")
def problem():
    return build_problem(NAME)


def test_it_is_registered_with_borisks_settings(problem) -> None:
    assert NAME in PROBLEMS
    assert (problem.d_x, problem.d_z, problem.alpha, problem.noise_std) == (2, 2, 0.3, 10.0)
    assert (problem.n_init, problem.iterations) == (72, 120)
    points = problem.z.points.numpy()
    grid = {(a, b) for a in (0.2, 0.4, 0.6, 0.8) for b in (0.25, 0.5, 0.75)}
    assert {tuple(p) for p in points.round(12)} == grid
    first = {0.2: 0.15, 0.4: 0.35, 0.6: 0.35, 0.8: 0.15}
    second = {0.25: 0.25, 0.5: 0.5, 0.75: 0.25}
    expected = [first[round(a, 1)] * second[round(b, 2)] for a, b in points]
    assert problem.z.masses.numpy() == pytest.approx(expected, abs=1e-15)
    assert problem.z.masses.numpy() == pytest.approx(UNITS * 0.0125, abs=1e-15)


def test_f_is_minus_the_product_of_two_branins(problem) -> None:
    at_min = (math.pi + 5) / 15, 2.275 / 15  # Branin's minimum (pi, 2.275), on [0, 1]
    x = torch.tensor([[at_min[0], at_min[1]]], dtype=torch.float64)
    z = torch.tensor([[at_min[1], at_min[0]]], dtype=torch.float64)
    assert float(problem.f(x, z)) == pytest.approx(-(BRANIN_MIN**2), rel=1e-12)
    rng = np.random.default_rng(0)
    xs, ws = rng.random((50, 2)), rng.random((7, 2))
    got = problem.f(torch.tensor(xs)[:, None, :], torch.tensor(ws)[None, :, :]).numpy()
    assert got == pytest.approx(-borisk_f(xs, ws), rel=1e-12)


def borisk_var_cvar(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BoRisk's VaR and CVaR at 0.7 of F (one row per x), in exact weight units, and whether a
    row's cumulative weight lands exactly on 0.7 below its VaR (a tie)."""
    order = np.argsort(values, axis=1, kind="stable")
    v = np.take_along_axis(values, order, axis=1)
    units = UNITS[order]
    cumulative = np.cumsum(units, axis=1)
    index = (cumulative < SEVENTY).sum(axis=1)  # first inclusive cumulative weight >= 0.7
    var = v[np.arange(len(v)), index]
    tail = np.arange(v.shape[1])[None, :] >= index[:, None]
    cvar = (v * units * tail).sum(axis=1) / (units * tail).sum(axis=1)
    return var, cvar, cumulative[np.arange(len(v)), index] == SEVENTY


def upper_tail_mean(values: np.ndarray) -> np.ndarray:
    """The mean of F over its upper 30 % (Rockafellar-Uryasev), in exact weight units."""
    order = np.argsort(-values, axis=1, kind="stable")
    v = np.take_along_axis(values, order, axis=1)
    units = UNITS[order]
    before = np.cumsum(units, axis=1) - units
    taken = np.clip(24 - before, 0, units)  # 0.3 = 24 units, from the top
    return (v * taken).sum(axis=1) / 24


def test_var_and_cvar_against_borisks_formulas(problem) -> None:
    """VaR_0.3(f) is minus BoRisk's VaR_0.7(F): the two quantiles could part only where the weights
    of the values below one sum to exactly 0.7, and no x here lands there (F is a product of a
    function of w1 and one of w2, which leaves few orders). CVaR_0.3(f) is minus the upper-30 %
    mean of F, and BoRisk's CVaR never exceeds that mean (it also averages the VaR's weight below
    0.7), and mostly falls short of it."""
    rng = np.random.default_rng(1)
    x = rng.random((4000, 2))
    values = borisk_f(x, problem.z.points.numpy())
    var, cvar, tie = borisk_var_cvar(values)
    assert not tie.any()
    assert -problem.var(torch.tensor(x)).numpy() == pytest.approx(var, rel=1e-12)
    ours_cvar = -problem.cvar(torch.tensor(x)).numpy()
    assert ours_cvar == pytest.approx(upper_tail_mean(values), rel=1e-10)
    assert np.all(cvar <= ours_cvar * (1 + 1e-12) + 1e-9)
    assert np.mean(np.abs(cvar - ours_cvar) > 1e-6 * np.abs(ours_cvar)) > 0.5


def test_the_stored_optima_are_attained_and_not_beaten_on_a_grid(problem) -> None:
    """A 201 x 201 grid of x, with F written again: no point beats the stored VaR or CVaR."""
    axis = np.linspace(0, 1, 201)
    x = np.stack(np.meshgrid(axis, axis, indexing="ij"), -1).reshape(-1, 2)
    values = borisk_f(x, problem.z.points.numpy())
    var, _, tie = borisk_var_cvar(values)
    assert not tie.any()
    assert -var.min() <= problem.optimum.var + 1e-9
    assert -upper_tail_mean(values).max() <= problem.optimum.cvar + 1e-9
    best = torch.tensor([problem.optimum.argmax_var], dtype=torch.float64)
    assert float(problem.var(best)) == pytest.approx(problem.optimum.var, rel=1e-12)
