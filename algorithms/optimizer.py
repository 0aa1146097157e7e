"""V-UCB (or any registered algorithm) on your own function: :class:`VaROptimizer`.

Maximize VaR_alpha(f(x, Z)) over a box of x, where f is a black box: a Python function of numpy
arrays or torch tensors (:meth:`VaROptimizer.run`), or an experiment evaluated elsewhere, one query
at a time (:meth:`VaROptimizer.ask` and :meth:`VaROptimizer.tell`, with :meth:`VaROptimizer.save`
and :meth:`VaROptimizer.load` between sessions)::

    import numpy as np
    from algorithms import VaROptimizer

    def f(x, z):                       # x: d_x values in the bounds, z: d_z values of Z
        return -(x[0] - 1.0) ** 2 - z[0]

    opt = VaROptimizer(bounds=[(-2.0, 3.0)], z=([[0.0], [1.0], [2.0]], [0.05, 0.65, 0.3]), alpha=0.1)
    best = opt.run(f, iterations=20)   # the recommended x and its estimated VaR
    print(best.x, best.var)

Everything runs as in a grid cell (:mod:`harness.cell`): the same loop
(:class:`algorithms.loop.BOLoop`: the GP profile and its fit schedule, proposals and
recommendations), the same algorithm classes, seeds derived from (``name``, ``seed``). Internally x
and z live on the unit cube (the GP's lengthscale bounds assume it); :class:`VaROptimizer` maps your
units to it and back, so you only see yours. Outcomes are standardized by the GP itself. Observation
noise is whatever your function has: nothing is added.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from botorch.models import SingleTaskGP
from torch import Tensor

from algorithms.base import Algorithm, build_algorithm
from algorithms.gp import DEFAULT_GP, gp_profile
from algorithms.loop import BOLoop
from algorithms.registry import algorithm_factory
from problems import ContinuousZ, DiscreteZ, Problem, TruncatedNormalZ, UniformZ
from problems.checks import positive_int
from problems.float64 import default_float64
from problems.seeding import derive_seed

__all__ = ["Best", "VaROptimizer"]

ArrayLike = Tensor | np.ndarray | Sequence[float] | Sequence[Sequence[float]]


@dataclass(frozen=True)
class Best:
    """A recommendation in your units.

    Attributes:
        x: ``d_x`` numpy array, inside the bounds.
        var: VaR_alpha of the GP posterior mean at ``x`` over Z (the estimate the algorithm ranks
            its candidates by; not a bound, and only as good as the model).
        n_observations: the evaluations of f it rests on.
    """

    x: np.ndarray
    var: float
    n_observations: int


def _tensor(value: ArrayLike, what: str) -> Tensor:
    try:
        return torch.as_tensor(np.asarray(value, dtype=np.float64), dtype=torch.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{what} must be numbers, got {value!r}: {error}") from None


def _no_objective(_: Tensor) -> Tensor:
    raise RuntimeError("the objective is your function: VaROptimizer never evaluates it itself")


class VaROptimizer:
    """Maximize VaR_alpha(f(x, Z)) over x in a box, f a black box (see the module docstring).

    Args:
        bounds: the box of x, as ``[(low, high), ...]`` (one pair per dimension) or a ``2 x d_x``
            array; any finite box with low < high.
        z: the distribution of Z in your units: ``(points, masses)`` (``m x d_z`` and ``m``, masses
            summing to one; a 1-D ``points`` is m values of a scalar Z), a :class:`problems.DiscreteZ`,
            a :class:`problems.TruncatedNormalZ` (continuous; same mean, std and bounds on every
            coordinate) or a :class:`problems.UniformZ` (continuous, uniform on the same bounds on
            every coordinate).
        alpha: the risk level in (0, 1).
        algorithm: a registered name (default ``"vucb-prob"``; ``"vucb-unif"``, ``"stableopt"``,
            ``"rhokg-apx"``, ``"random"``, ...), an import path ``MODULE:ATTR``, or an
            :class:`Algorithm` subclass.
        seed: the run's index; with ``name`` it fixes the initial design and every random stream.
        n_init: evaluations before the first model (default 2 (d_x + d_z), at least 3), drawn
            uniformly: x over the box, z over the support of Z.
        gp: the GP profile (:data:`algorithms.gp.GP_PROFILES`, default ``"paper"``).
        options: the algorithm's options (e.g. ``{"beta": 2.0}``).
        name: the run's name (seeds derive from it).
    """

    def __init__(self, bounds: ArrayLike, z: object, alpha: float, algorithm: str | type = "vucb-prob",
                 seed: int = 0, n_init: int | None = None, gp: str = DEFAULT_GP,
                 options: dict | None = None, name: str = "own-function") -> None:
        box = _tensor(bounds, "bounds")
        if not isinstance(bounds, Tensor | np.ndarray) and box.ndim == 2:
            box = box.T  # a list of (low, high) pairs, one per dimension -> 2 x d_x
        if box.ndim != 2 or box.shape[0] != 2 or box.shape[1] < 1:
            raise ValueError("bounds must be [(low, high), ...] or a 2 x d_x array (BoTorch's "
                             f"convention), got {bounds!r}")
        if not bool(torch.isfinite(box).all()) or not bool((box[0] < box[1]).all()):
            raise ValueError(f"bounds must be finite with low < high in every dimension, got "
                             f"{box.T.tolist()}")
        if not 0.0 < float(alpha) < 1.0:
            raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
        positive_int("", "seed", seed, allow_zero=True)
        self.bounds = box
        self.alpha = float(alpha)
        self.seed = seed
        self.name = name
        self.gp = gp_profile(gp).name
        self.options = dict(options or {})
        self._z_user = z
        unit_z, self._z_low, self._z_scale = self._unit_z(z)
        d_x, d_z = box.shape[1], unit_z.d_z
        n_init = max(3, 2 * (d_x + d_z)) if n_init is None else n_init
        positive_int("", "n_init", n_init)
        self.problem = Problem(name=name, d_x=d_x, d_z=d_z, z=unit_z, alpha=self.alpha, noise_std=0.0,
                               n_init=n_init, iterations=1, objective=_no_objective,
                               description="a black box evaluated by the user")
        if isinstance(algorithm, type):
            self.algorithm_name = f"{algorithm.__module__}:{algorithm.__qualname__}"
            factory = algorithm
        else:
            self.algorithm_name = algorithm
            factory = algorithm_factory(algorithm)
        self._seed_root = derive_seed(name, seed)
        with default_float64():
            self.algorithm: Algorithm = build_algorithm(self.algorithm_name, factory, self.problem,
                                                        self._seed_root, **self.options)
        design = self.problem.initial_design(seed, not self.algorithm.chooses_z)
        self._design = torch.cat(design, dim=-1)  # n_init x (d_x + d_z)
        self.loop = BOLoop(self.algorithm, self._seed_root, self.gp)  # the data (unit cube) and model
        self._pending: Tensor | None = None  # the unit-cube query last asked and not yet told

    # -- units -----------------------------------------------------------------------------------

    @staticmethod
    def _unit_z(z: object) -> tuple[DiscreteZ | ContinuousZ, Tensor, Tensor]:
        """Z on the unit cube, and the offset and scale that map it back to your units."""
        if isinstance(z, TruncatedNormalZ | UniformZ):
            width = z.upper - z.lower
            unit = (TruncatedNormalZ(z.d_z, (z.mean - z.lower) / width, z.std / width, 0.0, 1.0)
                    if isinstance(z, TruncatedNormalZ) else UniformZ(z.d_z))
            low = torch.full((z.d_z,), z.lower, dtype=torch.float64)
            return unit, low, torch.full((z.d_z,), width, dtype=torch.float64)
        if isinstance(z, DiscreteZ):
            points, masses = z.points, z.masses
        elif isinstance(z, tuple | list) and len(z) == 2:
            points, masses = _tensor(z[0], "the points of Z"), _tensor(z[1], "the masses of Z")
            points = points.unsqueeze(-1) if points.ndim == 1 else points
        else:
            raise ValueError("z must be (points, masses), a problems.DiscreteZ, TruncatedNormalZ or "
                             f"UniformZ, got {type(z).__name__}")
        low, high = points.min(dim=0).values, points.max(dim=0).values
        scale = torch.where(high > low, high - low, torch.ones_like(high))
        return DiscreteZ((points - low) / scale, masses), low, scale

    def _to_user(self, u: Tensor) -> tuple[np.ndarray, np.ndarray]:
        d_x = self.problem.d_x
        x = self.bounds[0] + (self.bounds[1] - self.bounds[0]) * u[:d_x]
        z = self._z_low + self._z_scale * u[d_x:]
        return x.numpy().copy(), z.numpy().copy()

    def _to_unit(self, x: ArrayLike, z: ArrayLike) -> Tensor:
        xt = _tensor(x, "x").reshape(-1)
        zt = _tensor(z, "z").reshape(-1)
        if xt.shape[0] != self.problem.d_x or zt.shape[0] != self.problem.d_z:
            raise ValueError(f"x must have {self.problem.d_x} values and z {self.problem.d_z}, got "
                             f"{xt.shape[0]} and {zt.shape[0]}")
        ux = (xt - self.bounds[0]) / (self.bounds[1] - self.bounds[0])
        return torch.cat([ux, (zt - self._z_low) / self._z_scale])

    # -- the loop --------------------------------------------------------------------------------

    @property
    def train_X(self) -> Tensor:  # noqa: N802 (BoTorch's name, as before)
        """``n x (d_x + d_z)`` the queries told so far, on the unit cube."""
        return self.loop.train_X

    @property
    def train_Y(self) -> Tensor:  # noqa: N802 (BoTorch's name, as before)
        """``n x 1`` their outcomes."""
        return self.loop.train_Y

    @property
    def model(self) -> SingleTaskGP | None:
        """The GP of the data on the unit cube, None before the initial design is told."""
        return self.loop.model

    @property
    def n_observations(self) -> int:
        return self.loop.n_observations

    @property
    def iteration(self) -> int:
        """BO iterations told so far (the initial design is iteration 0)."""
        return self.loop.iteration

    def ask(self) -> tuple[np.ndarray, np.ndarray]:
        """The next query (x, z) in your units: the initial design first, then the algorithm's
        proposals. Asking again before :meth:`tell` returns the same query."""
        if self._pending is None:
            n = self.n_observations
            if n < self.problem.n_init:
                self._pending = self._design[n]
            else:
                proposal = self.loop.propose()
                self._pending = torch.cat([proposal.x, proposal.z])
        return self._to_user(self._pending)

    def tell(self, x: ArrayLike, z: ArrayLike, y: float) -> None:
        """Record f(x, z) = y (x and z in your units; any point, not only the one asked)."""
        value = float(np.asarray(y, dtype=np.float64).reshape(()))
        if not math.isfinite(value):
            raise ValueError(f"y must be a finite number, got {y!r}")
        u = self._to_unit(x, z)
        self._pending = None
        self.loop.tell(u.unsqueeze(0), torch.tensor([value], dtype=torch.float64))

    def recommend(self) -> Best:
        """The algorithm's recommendation among the x evaluated so far, with its estimated VaR."""
        rec = self.loop.recommend()
        x, _ = self._to_user(torch.cat([rec.x, torch.zeros(self.problem.d_z, dtype=torch.float64)]))
        var = rec.info.get("var_mean_rec")
        return Best(x, math.nan if var is None else float(var), self.n_observations)

    def run(self, f: Callable[[np.ndarray, np.ndarray], float], iterations: int,
            progress: bool = False) -> Best:
        """Evaluate ``f(x, z)`` (x, z numpy arrays in your units; a float back, numpy or torch
        scalars welcome) on the initial design, then for ``iterations`` BO iterations; returns
        :meth:`recommend`. Continues where the optimizer is (after :meth:`load`, say)."""
        positive_int("", "iterations", iterations, allow_zero=True)
        total = self.problem.n_init + iterations
        with _Progress(progress, total, self.n_observations) as bar:
            while self.n_observations < total:
                x, z = self.ask()
                y = f(x, z)
                self.tell(x, z, float(y.item() if hasattr(y, "item") else y))
                bar.update(1)
        return self.recommend()

    # -- saving ----------------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """Everything needed to continue: settings, data, the model's hyperparameters, the states of
        the random streams and of the algorithm (tensors and plain data only)."""
        z = self._z_user
        if isinstance(z, TruncatedNormalZ):
            z_state = {"kind": "truncated-normal", "d_z": z.d_z, "mean": z.mean, "std": z.std,
                       "lower": z.lower, "upper": z.upper}
        elif isinstance(z, UniformZ):
            z_state = {"kind": "uniform", "d_z": z.d_z, "lower": z.lower, "upper": z.upper}
        else:
            unit = self.problem.z
            assert isinstance(unit, DiscreteZ)
            z_state = {"kind": "discrete", "points": unit.points * self._z_scale + self._z_low,
                       "masses": unit.masses}
        return {
            "settings": {"bounds": self.bounds, "alpha": self.alpha, "algorithm": self.algorithm_name,
                         "seed": self.seed, "n_init": self.problem.n_init, "gp": self.gp,
                         "options": self.options, "name": self.name, "z": z_state},
            **self.loop.state_dict(),  # train_X, train_Y, model, fit_rng, algorithm
            "pending": self._pending,
        }

    def save(self, path: str | os.PathLike) -> None:
        """Write :meth:`state_dict` to ``path`` whole or not at all (a temporary file, renamed)."""
        buffer = io.BytesIO()
        torch.save(self.state_dict(), buffer)
        path = Path(path)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(buffer.getvalue())
        tmp.replace(path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> VaROptimizer:
        """An optimizer that continues exactly where the saved one stopped (same next query)."""
        state = torch.load(io.BytesIO(Path(path).read_bytes()), weights_only=True)
        s = state["settings"]
        z = s["z"]
        z_user: object = (TruncatedNormalZ(z["d_z"], z["mean"], z["std"], z["lower"], z["upper"])
                          if z["kind"] == "truncated-normal" else
                          UniformZ(z["d_z"], z["lower"], z["upper"]) if z["kind"] == "uniform" else
                          DiscreteZ(z["points"], z["masses"]))
        opt = cls(s["bounds"], z_user, s["alpha"], s["algorithm"], s["seed"], s["n_init"], s["gp"],
                  s["options"], s["name"])
        opt.loop.load_state_dict(state)
        opt._pending = state["pending"]
        return opt


class _Progress:
    """A tqdm bar when asked for, else nothing (``with`` either way)."""

    def __init__(self, show: bool, total: int, done: int) -> None:
        self.bar = None
        if show:
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=done, unit="evaluation")

    def __enter__(self) -> _Progress:
        return self

    def __exit__(self, *_: object) -> None:
        if self.bar is not None:
            self.bar.close()

    def update(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)
