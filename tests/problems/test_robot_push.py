"""robot-push-3-2: the simulator's determinism and physics, the problem's definition, its optimum."""

import math
import subprocess
import sys

import numpy as np
import pytest
import torch

from problems import build_problem
from problems.optima import load_table
from problems.robot_push import _simulate, push, push_many, robot_push_problem

# Starts on the pusher's reach (|r| < 5, t_p long enough to touch the object), chosen once by hand.
MOVING = [(-3.0, 0.5, 12.0), (2.0, -2.5, 20.0), (-1.5, -1.0, 8.0), (4.0, 3.0, 25.0), (0.5, 3.5, 15.0)]


def test_push_is_deterministic_within_and_across_processes() -> None:
    first = [_simulate(*p) for p in MOVING]
    assert [_simulate(*p) for p in MOVING] == first
    assert [push(*p) for p in MOVING] == first  # the cache returns what the simulator computes
    code = ("from problems.robot_push import _simulate; "
            f"print(repr([_simulate(*p) for p in {MOVING!r}]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert eval(out.stdout) == first


def test_a_pusher_that_cannot_reach_the_object_leaves_it_at_the_origin() -> None:
    # driven at most ~5 units/s for 0.1 s (t_p = 1: 10 steps), it stops far short of the object
    for rx, ry in [(-5.0, -5.0), (5.0, 0.0), (0.0, -5.0), (3.5, 3.5)]:
        assert push(rx, ry, 1.0) == (0.0, 0.0)


@pytest.mark.parametrize("start", MOVING)
def test_the_object_moves_away_from_the_pusher(start: tuple[float, float, float]) -> None:
    hx, hy = push(*start)
    moved = math.hypot(hx, hy)
    assert moved > 0.1
    # the push is along -r (from the pusher's start to the origin): the displacement points there
    cosine = -(hx * start[0] + hy * start[1]) / (moved * math.hypot(start[0], start[1]))
    assert cosine > 0.9


@pytest.mark.parametrize("start", MOVING)
def test_mirroring_r_y_mirrors_h(start: tuple[float, float, float]) -> None:
    rx, ry, tp = start
    hx, hy = push(rx, ry, tp)
    mx, my = push(rx, -ry, tp)
    # Box2D is float32, and the mirrored world rounds differently: equal to float32 precision
    assert mx == pytest.approx(hx, abs=1e-4) and my == pytest.approx(-hy, abs=1e-4)


def test_a_push_along_the_x_axis_stays_on_it() -> None:
    hx, hy = push(-3.0, 0.0, 15.0)
    assert hx > 1.0 and hy == 0.0


def test_longer_pushes_move_the_object_further() -> None:
    distances = [math.hypot(*push(-2.0, 1.0, tp)) for tp in (3.0, 6.0, 12.0, 24.0)]
    assert distances == sorted(distances) and distances[0] < distances[-1] - 1.0


def test_batched_evaluation_matches_single_pushes_with_and_without_a_pool() -> None:
    rng = np.random.default_rng(3)
    points = rng.uniform([-5, -5, 1], [5, 5, 30], size=(24, 3))
    single = np.array([_simulate(*p) for p in points.tolist()])
    assert np.array_equal(push_many(points), single)
    assert np.array_equal(push_many(points, workers=2, chunk=8), single)


def test_problem_definition_matches_the_paper() -> None:
    p = robot_push_problem()
    assert (p.d_x, p.d_z, p.alpha, p.noise_std, p.n_init, p.iterations) == (3, 2, 0.1, 0.1, 30, 100)
    # W on the 8 x 8 grid of [-1, 1]^2, masses proportional to exp(-(Wx^2 + Wy^2) / 0.4^2)
    axis = np.linspace(-1.0, 1.0, 8)
    W = np.array([(a, b) for a in axis for b in axis])
    masses = np.exp(-(W**2).sum(1) / 0.16)
    masses /= masses.sum()
    order_p = np.lexsort(p.z.points.numpy().T)
    order_w = np.lexsort(((W + 1.0) / 2.0).T)
    assert np.allclose(p.z.points.numpy()[order_p], ((W + 1.0) / 2.0)[order_w], atol=1e-15)
    assert np.allclose(p.z.masses.numpy()[order_p], masses[order_w], rtol=1e-12)


def test_objective_is_minus_the_distance_to_the_goal() -> None:
    p = robot_push_problem()
    g = torch.Generator().manual_seed(5)
    x = torch.rand(6, 3, generator=g)
    z = p.z.points[torch.randint(64, (6,), generator=g)]
    f = p.f(x, z)
    for i in range(6):
        rx, ry, tp = -5 + 10 * float(x[i, 0]), -5 + 10 * float(x[i, 1]), 1 + 29 * float(x[i, 2])
        wx, wy = 2 * float(z[i, 0]) - 1, 2 * float(z[i, 1]) - 1
        hx, hy = _simulate(rx + wx, ry + wy, tp)
        assert float(f[i]) == pytest.approx(-math.hypot(hx - 3.0, hy - 4.0), abs=1e-12)


def _independent_var(values: np.ndarray, masses: np.ndarray, alpha: float) -> float:
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(masses[order])
    return float(values[order][np.searchsorted(cumulative, alpha - 1e-12)])


@pytest.fixture(scope="module")
def random_support() -> np.ndarray:
    """f at all 64 W for 100 random x, ``100 x 64`` (6,400 simulations, about 10 s; shared)."""
    x = torch.rand(100, 3, generator=torch.Generator().manual_seed(11))
    return build_problem("robot-push-3-2", with_optimum=False).support_values(x).numpy()


def test_stored_optimum_is_attained_and_not_beaten_by_random_x(random_support: np.ndarray) -> None:
    entry = load_table()["robot-push-3-2"]
    p = build_problem("robot-push-3-2")
    masses = p.z.masses.numpy()
    best = torch.tensor([p.optimum.argmax_var])
    values = p.support_values(best)[0].numpy()
    assert _independent_var(values, masses, 0.1) == pytest.approx(p.optimum.var, abs=1e-12)
    worst = p.support_values(torch.tensor([p.optimum.argmax_worst_case]))[0].numpy()
    assert float(worst.min()) == pytest.approx(p.optimum.worst_case, abs=1e-12)
    # none of 100 random x beats a search of >= 10^4 times as many
    assert max(_independent_var(v, masses, 0.1) for v in random_support) <= p.optimum.var
    assert float(random_support.min(axis=1).max()) <= p.optimum.worst_case
    assert entry["lower_bound"] is True and entry["search_size"]["sobol_x"] >= 10_000


def test_stored_mean_optimum_is_attained_and_not_beaten_by_random_x(random_support: np.ndarray) -> None:
    entry = load_table()["robot-push-3-2"]["mean"]
    p = build_problem("robot-push-3-2")
    # the masses from the paper's definition, not from the problem: exp(-||W||^2 / 0.4^2) on the grid
    w = 2 * p.z.points.numpy() - 1
    masses = np.exp(-(w ** 2).sum(axis=1) / 0.4 ** 2)
    masses /= masses.sum()
    values = p.support_values(torch.tensor([p.optimum.argmax_mean]))[0].numpy()
    assert float(values @ masses) == pytest.approx(p.optimum.mean, abs=1e-12)
    assert float((random_support @ masses).max()) <= p.optimum.mean
    # nor do the other targets' maximizers (VaR, CVaR, worst case); at the CVaR maximizer the mean
    # is at least the lower-tail mean there, the stored CVaR
    others = torch.tensor([p.optimum.argmax_var, p.optimum.argmax_cvar, p.optimum.argmax_worst_case])
    other_means = p.support_values(others).numpy() @ masses
    assert float(other_means.max()) <= p.optimum.mean
    assert p.optimum.cvar <= float(other_means[1])
    assert entry["search"]["complete"] is True and entry["search"]["search_size"]["sobol_x"] == 100_000
