"""The optimum of ``robot-push-3-2``: a resumable quasi-random search, then multi-start refinement.

h has no closed form and every f(x, .) costs 64 simulations, so the grid-and-zoom of
:mod:`problems.optima` (101^3 x) is out of reach. Instead:

1. ``N_SOBOL`` scrambled Sobol x (seed ``SOBOL_SEED``) in [0, 1]^3, each simulated at all 64 W; the
   64 values of f per x are kept, so both targets (and VaR at any alpha) come from the same runs;
2. from the ``N_STARTS`` best x that lie at least ``MIN_SEPARATION`` apart, Nelder-Mead on the target
   (derivative-free: the target jumps where a contact starts or ``int(10 t_p)`` changes), at most
   ``MAX_EVALUATIONS`` x per start; the best point wins.

Both phases checkpoint into the user cache directory (:func:`problems.cache.cache_dir`) after every
chunk or start, so an interrupted search resumes where it was. The value is a lower bound of the
true maximum (the best point found): a BO run whose recommendation has a VaR above it has a negative
regret, which means the bound was beaten, not that the run is wrong.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from scipy.optimize import minimize
from torch import Tensor

from problems.base import Problem
from problems.cache import cache_dir
from problems.measures import risk_measure

N_SOBOL = 100_000
SOBOL_SEED = 0
#: x simulated between two checkpoints (500 x 64 = 32,000 simulations, about a minute).
CHUNK_X = 500
N_STARTS = 10
MIN_SEPARATION = 0.05
MAX_EVALUATIONS = 200
#: Nelder-Mead's first simplex: about the spacing of 10^5 points in [0, 1]^3.
INITIAL_STEP = 0.02
COMMAND = "python -m problems --write-optima robot-push-3-2 [--workers N]"
#: Bumped whenever the simulator or the search changes, so a stale checkpoint is not reused.
VERSION = 1


def _checkpoint_dir() -> Path:
    return cache_dir("robot-push-optimum", f"v{VERSION}-sobol{SOBOL_SEED}")


def sobol_points(n: int = N_SOBOL) -> Tensor:
    """The first ``n`` points of the search's scrambled Sobol sequence, ``n x 3``."""
    engine = torch.quasirandom.SobolEngine(3, scramble=True, seed=SOBOL_SEED)
    return engine.draw(n, dtype=torch.float64)


def _support_values(problem: Problem, x: Tensor, workers: int, objective_with: Callable) -> Tensor:
    """f at every W: ``n x 3`` -> ``n x 64``, by ``objective_with(workers)`` (the problem's f on
    ``workers`` processes: :func:`problems.robot_push.objective_with`, given by the caller so that
    this module does not import the problem's, which names this search as its own)."""
    points = problem.z.points
    xz = torch.cat([x.unsqueeze(-2).expand(-1, points.shape[0], -1),
                    points.expand(x.shape[0], -1, -1)], dim=-1)
    return objective_with(workers)(xz.reshape(-1, 5)).reshape(x.shape[0], points.shape[0])


def _save_atomic(path: Path, array: np.ndarray) -> None:
    tmp = path.with_name("." + path.name)  # hidden: the chunk glob never sees a half-written file
    np.save(tmp, array)
    os.replace(tmp, path)


def _cpu_seconds() -> float:
    """CPU seconds of this process and its finished children (the pool's workers): the search's
    cost, unaffected by the machine's load or by the process being paused."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _progress_file() -> Path:
    return _checkpoint_dir() / "sobol-seconds.json"


def _sobol_seconds() -> float:
    """CPU seconds spent simulating Sobol x so far, over every resumed call."""
    path = _progress_file()
    return json.loads(path.read_text())["seconds"] if path.exists() else 0.0


def _add_seconds(seconds: float) -> None:
    path = _progress_file()
    tmp = path.with_name("." + path.name)
    tmp.write_text(json.dumps({"seconds": _sobol_seconds() + seconds}))
    os.replace(tmp, path)


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def sobol_values(problem: Problem, objective_with: Callable, workers: int = 1, stop_at: int | None = None,
                 shown: str = "var") -> np.ndarray:
    """The 64 values of f at each Sobol x, ``n x 64``, resuming from and extending the checkpoint.

    Runs until ``stop_at`` x (default ``N_SOBOL``) are done; ``stop_at=0`` only reads what is there.
    ``shown``: the target (a risk measure's name) whose best value so far the progress line gives.
    """
    directory = _checkpoint_dir()
    target = N_SOBOL if stop_at is None else stop_at
    chunks = sorted(directory.glob("chunk-*.npy"))
    done = [np.load(c) for c in chunks]
    n_done = sum(c.shape[0] for c in done)
    if n_done < target:
        X = sobol_points(N_SOBOL)
        start_time, first = time.perf_counter(), n_done
        while n_done < target:
            batch = X[n_done:min(n_done + CHUNK_X, target)]
            t0 = _cpu_seconds()
            values = _support_values(problem, batch, workers, objective_with).numpy()
            _add_seconds(_cpu_seconds() - t0)
            _save_atomic(directory / f"chunk-{n_done:07d}.npy", values)
            done.append(values)
            n_done += batch.shape[0]
            rate = (n_done - first) / (time.perf_counter() - start_time)
            best = float(_target_values(problem, shown, torch.from_numpy(np.concatenate(done)),
                                        problem.alpha).max())
            _log(f"robot-push-3-2 Sobol: {n_done}/{target} x ({64 * n_done} simulations), "
                 f"{rate * 64:.0f} simulations/s, about {(target - n_done) / rate / 60:.0f} min left; "
                 f"best {shown} so far {best:.6f}")
    values = np.concatenate(done) if done else np.empty((0, 64))
    return values[:target] if stop_at else values


def _starts(X: Tensor, scores: Tensor) -> list[int]:
    """Indices of the ``N_STARTS`` best x that are at least ``MIN_SEPARATION`` from each other."""
    chosen: list[int] = []
    for i in torch.argsort(scores, descending=True).tolist():
        if all(float((X[i] - X[j]).norm()) >= MIN_SEPARATION for j in chosen):
            chosen.append(i)
        if len(chosen) == N_STARTS:
            break
    return chosen


def _refine(target, x0: Tensor, value0: float) -> tuple[float, list[float], int]:
    """Nelder-Mead from ``x0`` on ``target`` (``x`` -> float), boxed in [0, 1]^3."""
    evaluations = 0

    def loss(x: np.ndarray) -> float:
        nonlocal evaluations
        evaluations += 1
        return -target(torch.from_numpy(np.clip(x, 0.0, 1.0)))

    simplex = [x0.numpy()] + [np.clip(x0.numpy() + INITIAL_STEP * e, 0.0, 1.0) for e in np.eye(3)]
    result = minimize(loss, x0.numpy(), method="Nelder-Mead", bounds=[(0.0, 1.0)] * 3,
                      options={"maxfev": MAX_EVALUATIONS, "initial_simplex": np.array(simplex),
                               "xatol": 1e-6, "fatol": 1e-9})
    if -result.fun > value0:
        return float(-result.fun), np.clip(result.x, 0.0, 1.0).tolist(), evaluations
    return value0, x0.tolist(), evaluations


def _refine_target(problem: Problem, name: str, alpha: float, X: Tensor, scores: Tensor,
                   workers: int, n_sobol: int, objective_with: Callable) -> dict:
    """Multi-start refinement of one target (``var``, ``cvar`` or ``worst_case``), checkpointed per
    start."""
    path = _checkpoint_dir() / f"refine-{name}-alpha{alpha}-n{n_sobol}.json"
    state = json.loads(path.read_text()) if path.exists() else {"starts": []}

    def target(x: Tensor) -> float:
        values = _support_values(problem, x.unsqueeze(0), workers, objective_with)
        return float(_target_values(problem, name, values, alpha)[0])

    for k, i in enumerate(_starts(X, scores)):
        if k < len(state["starts"]):
            continue
        t0, c0 = time.perf_counter(), _cpu_seconds()
        value, argmax, evaluations = _refine(target, X[i], float(scores[i]))
        state["starts"].append({"start": X[i].tolist(), "start_value": float(scores[i]),
                                "value": value, "argmax": argmax, "evaluations": evaluations,
                                "cpu_seconds": _cpu_seconds() - c0})
        path.write_text(json.dumps(state, indent=1))
        _log(f"robot-push-3-2 refine {name} start {k + 1}/{N_STARTS}: {float(scores[i]):.6f} -> "
             f"{value:.6f} ({evaluations} x, {time.perf_counter() - t0:.0f} s)")
    best = max(state["starts"], key=lambda s: s["value"])
    coarse = float(scores.max())
    return {
        "value": best["value"],
        "argmax": best["argmax"],
        "coarse_value": coarse,
        "refinement_gain": best["value"] - coarse,
        "evaluations": n_sobol + sum(s["evaluations"] for s in state["starts"]),
        "refinement_cpu_seconds": round(sum(s["cpu_seconds"] for s in state["starts"]), 1),
        "starts": [{"start_value": s["start_value"], "value": s["value"]} for s in state["starts"]],
    }


def _target_values(problem: Problem, name: str, values: Tensor, alpha: float) -> Tensor:
    """A target (a risk measure's name) at each x from its 64 values of f, ``n x 64`` -> ``n``."""
    return risk_measure(name).of_distribution(values, problem.z.masses.to(values), alpha)


def search(problem: Problem, alpha: float | None = None, workers: int = 1, partial: bool = False,
           targets: tuple[str, ...] = ("var", "worst_case"), *, objective_with: Callable) -> dict:
    """The ``targets`` of ``robot-push-3-2`` at ``alpha`` (``var``, ``worst_case``, ``cvar``); an
    entry of ``optima.json``.

    ``partial``: stop the quasi-random phase where the checkpoint is (no new Sobol simulations),
    refine from what is there and label the entry ``"complete": false``.
    """
    alpha = problem.alpha if alpha is None else alpha
    values = sobol_values(problem, objective_with, workers, stop_at=0 if partial else None, shown=targets[0])
    n_sobol = values.shape[0]
    if n_sobol == 0:
        raise RuntimeError("no Sobol simulations in the checkpoint yet; run without --partial first")
    X = sobol_points(n_sobol)
    V = torch.from_numpy(values)
    found = {name: _refine_target(problem, name, alpha, X, _target_values(problem, name, V, alpha),
                                  workers, n_sobol, objective_with) for name in targets}
    refine_x = sum(entry["evaluations"] - n_sobol for entry in found.values())
    return {
        "alpha": alpha,
        **found,
        "method": (f"scrambled Sobol x (seed {SOBOL_SEED}), each at all 64 W; then Nelder-Mead "
                   f"(at most {MAX_EVALUATIONS} x, first step {INITIAL_STEP}) from the {N_STARTS} best "
                   f"x at least {MIN_SEPARATION} apart, per target"),
        "search_size": {"sobol_x": n_sobol, "sobol_x_planned": N_SOBOL, "refinement_x": refine_x,
                        "simulations": 64 * (n_sobol + refine_x)},
        "complete": n_sobol >= N_SOBOL,
        "lower_bound": True,
        "command": COMMAND,
        # CPU seconds of the whole search, summed over resumed calls (wall clock depends on the load)
        "seconds": round(_sobol_seconds() + sum(entry["refinement_cpu_seconds"]
                                                for entry in found.values()), 1),
    }
