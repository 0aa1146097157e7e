"""One cell of a grid: one (problem, algorithm, seed) BO run, as a pure function of its spec.

``run_cell(spec)`` touches no Ray and writes nothing; it returns the per-iteration rows and the
metadata that :mod:`harness.store` writes to Parquet. Same spec, same rows (timings aside).

The loop is :class:`algorithms.loop.BOLoop`, the one :class:`algorithms.VaROptimizer` runs too:

* iteration 0: the initial design (from (problem, seed) only), a maximum-likelihood fit, a
  recommendation;
* iteration t = 1..T: ``propose`` (x_t, z_t) with the model of the data up to t - 1, observe
  y_t = f(x_t, z_t) + noise, update the model (a fit of the hyperparameters when t is a multiple
  of the GP profile's ``fit_every``, otherwise the new data with the hyperparameters kept),
  ``recommend``.

What only a cell does (the noisy observations of a benchmark, the true scores of each
recommendation, the theory recommendation, the rows, the checkpoints) is :class:`_CellRun`'s.

The GP is the cell's profile (``spec.gp``, :data:`algorithms.gp.GP_PROFILES`;
:data:`algorithms.gp.DEFAULT_GP` by default), the same for every algorithm; its fitted
hyperparameters are stored in every row (``gp_*``).

The observation noise is drawn from its own stream of (problem, seed), one draw per observation in
order (``noise_draws`` of them for a simulated problem, which maps them to its own variates), so
every algorithm of a seed sees the same noise sequence (common random numbers).

Checkpoints: with ``on_checkpoint``, the cell hands out its whole state (rows so far, data,
hyperparameters, the states of every random stream, the algorithm's state) as bytes after an
iteration, at most every ``checkpoint_every_s`` seconds (default 5 s: every iteration of a slow
algorithm, a few per cell of a fast one); ``run_cell(spec, checkpoint=those bytes)`` resumes after
that iteration and gives the same rows as an uninterrupted run (timings aside). Where the bytes are kept
is the caller's business (the grid keeps them in its results store); run_cell does no I/O. A caller
that says which host runs the call (``host``) has it kept in the checkpoints with the iteration it
started from, so that a resumed cell's metadata lists the hosts of its parts (``segments``): a resume
gives a whole run's bits only on the same kind of CPU.

The cell runs on one torch thread (and restores the caller's count after): torch sums a large
reduction in one chunk per thread, so the rows would depend on the caller's thread count.
The cell runs with torch's default dtype set to float64 (and restored after): a tensor or module
created without an explicit dtype somewhere below (e.g. GP hyperparameters set before the model is
cast to float64) would otherwise give rows that depend on the caller's default, and a cell's rows
must be the same in a Ray worker, in the single-cell command line and in a test process.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import time
from collections.abc import Callable, Mapping

import torch

from algorithms import algorithm_factory, build_algorithm
from algorithms.gp import FitReport, hyperparameters
from algorithms.loop import BOLoop
from harness.complexity import run_timing_cell
from harness.spec import CELL_KINDS, CellResult, CellSpec
from problems import DiscreteZ, get_problem
from problems.float64 import default_float64, torch_threads
from problems.measures import DEFAULT_RISK, RISK_MEASURES, WORST_CASE, RiskMeasure, risk_measure
from problems.seeding import derive_seed, generator

__all__ = ["CELL_KINDS", "CHECKPOINT_EVERY_S", "CellResult", "CellSpec", "checkpoint_iteration",
           "checkpoint_problem", "checkpoint_segments", "default_float64", "info_json", "resumed_iteration",
           "resumed_rows", "run_cell", "same_vendor"]

def _target(problem, factory: object, risk: str = DEFAULT_RISK) -> str:
    """Which optimum a cell's regret is measured against (a risk measure's name): what the algorithm
    declares (:attr:`algorithms.Algorithm.target`, a measure object), else the cell's risk measure,
    or the worst case wherever that risk measure is the worst case."""
    declared = getattr(factory, "target", None)
    if declared is not None:
        return declared.name
    below = isinstance(problem.z, DiscreteZ) and problem.alpha <= problem.z.min_mass
    if below and risk_measure(risk).worst_case_below_smallest_mass:
        return WORST_CASE.name  # VaR and CVaR below the smallest mass are the minimum over the support
    return risk


def _scored(risk: str) -> list[RiskMeasure]:
    """The measures whose true value a cell stores at every recommendation: VaR and the worst case
    (every cell's, for the figures of each), and the cell's own risk measure."""
    return list(dict.fromkeys([risk_measure(DEFAULT_RISK), WORST_CASE, risk_measure(risk)]))


def info_json(info: dict) -> str:
    """A proposal's ``info`` as the row's JSON text.

    Keys are sorted; tensors are written as lists, NaN and infinities as JSON's extensions ``NaN``,
    ``Infinity``, which Python's and pandas' readers take.

    Args:
        info: the proposal's ``info`` (plain values and tensors).

    Returns:
        The JSON text.

    Raises:
        TypeError: a value that is neither JSON nor a tensor.
    """
    def plain(value: object) -> object:
        if isinstance(value, torch.Tensor):
            return value.tolist()
        raise TypeError(f"info value of type {type(value).__name__} is not JSON")

    return json.dumps(info, sort_keys=True, default=plain)


CHECKPOINT_EVERY_S = 5.0


def run_cell(spec: CellSpec, checkpoint: bytes | None = None,
             on_checkpoint: Callable[[bytes, int], None] | None = None,
             checkpoint_every_s: float = CHECKPOINT_EVERY_S, threads: int = 1,
             host: Mapping[str, str] | None = None) -> CellResult:
    """Run one cell; see the module docstring.

    It raises on bad names or options. A timing cell (``spec.kind == "timing"``) is handed to
    :func:`harness.complexity.run_timing_cell` (it has no iterations, so no checkpoints).

    Args:
        spec: the cell.
        checkpoint: bytes from an earlier ``on_checkpoint`` of the same spec: resume after them.
        on_checkpoint: called with (bytes, last finished iteration) after an iteration, when at least
            ``checkpoint_every_s`` seconds passed since the last call (and never after the last iteration: the
            result is what counts then).
        checkpoint_every_s: the least seconds between two calls of ``on_checkpoint``.
        threads: torch threads during the cell (restored after). A cell's rows are defined at one, as the grid
            runs them; another count can change them in the last bits, which grow
            (:func:`problems.float64.torch_threads`).
        host: what the caller records of the host running this call (the grid's task:
            :func:`harness.kernels.host_record` and the CPU's vendor); with the first iteration it runs, it
            becomes the last of the cell's ``segments``, kept in its checkpoints and its metadata. None
            records nothing (the segments of ``checkpoint``, if any, are kept).

    Returns:
        The cell's :class:`~harness.spec.CellResult`, one row per iteration (0 to T) and the metadata
        :mod:`harness.store` writes with them.
    """
    if spec.kind == "timing":
        return run_timing_cell(spec)
    with default_float64(), torch_threads(threads):
        return _run_cell(spec, checkpoint, on_checkpoint, checkpoint_every_s, host)


def resumed_rows(spec: CellSpec, checkpoint: bytes, steps: int = 1) -> list[dict]:
    """The rows of the ``steps`` iterations after ``checkpoint``, without running the cell to its end.

    For timing an iteration at a run's own mid-run state (``benchmarks/resume_iteration.py``): the rows are
    those the whole run gives for these iterations (:func:`run_cell`'s loop, same bits), with their
    ``t_*_s`` timings; nothing is written and no checkpoint is handed out.

    Args:
        spec: the cell.
        checkpoint: bytes from an earlier ``on_checkpoint`` of the same spec.
        steps: how many iterations to run after the checkpoint's (at most those left).

    Returns:
        One row per iteration run, in order; empty where the checkpoint is at the cell's last iteration.

    Raises:
        ValueError: a checkpoint of another cell, or ``steps`` < 1.
    """
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    with default_float64(), torch_threads(1):
        cell = _CellRun(spec)
        first = cell.resume(checkpoint)
        return [cell.step(t) for t in range(first, min(first + steps, cell.iterations + 1))]


def _pack(state: dict) -> bytes:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def _unpack(data: bytes, spec: CellSpec) -> dict:
    state = torch.load(io.BytesIO(data), weights_only=True)  # tensors and plain data only
    if state.get("spec") != spec.to_json():
        raise ValueError("the checkpoint belongs to another cell")
    return state


def checkpoint_iteration(data: bytes) -> int:
    """The last finished iteration a checkpoint holds (it resumes after it).

    Args:
        data: the checkpoint's bytes (:func:`run_cell`'s ``on_checkpoint``).

    Returns:
        The iteration of the checkpoint's last row.
    """
    return int(torch.load(io.BytesIO(data), weights_only=True)["rows"][-1]["iteration"])


def checkpoint_segments(data: bytes) -> list[dict]:
    """The hosts that ran a checkpoint's iterations, as :func:`run_cell` recorded them.

    Args:
        data: the checkpoint's bytes (:func:`run_cell`'s ``on_checkpoint``).

    Returns:
        One dict per part of the run, oldest first: ``from`` (its first iteration) and what the caller's
        ``host`` said (``vendor``, ``cpu``, ...); empty for a checkpoint of a caller that said nothing, or
        of code older than the record.
    """
    return list(torch.load(io.BytesIO(data), weights_only=True).get("segments", []))


def checkpoint_problem(data: bytes, spec: CellSpec) -> str | None:
    """Why ``data`` is not a checkpoint to resume ``spec`` from, if it is not.

    The grid checks stored checkpoints with it before resuming from them; what ``run_cell`` needs beyond the
    finished rows it checks itself.

    Args:
        data: the stored bytes.
        spec: the cell they should resume.

    Returns:
        The reason in one line (empty, damaged, not torch data, another cell's, no finished iteration), or
        None for a checkpoint to resume from.
    """
    try:
        state = torch.load(io.BytesIO(data), weights_only=True)  # tensors and plain data only
        if not isinstance(state, dict):
            return f"not a checkpoint ({type(state).__name__})"
        if "spec" in state and state["spec"] != spec.to_json():
            return "the checkpoint belongs to another cell"
        int(state["rows"][-1]["iteration"])
    except Exception as error:  # whatever torch.load or a missing key raises: the reason, one line
        text = str(error).strip().splitlines()[0] if str(error).strip() else ""
        return f"{type(error).__name__}: {text}" if text else type(error).__name__
    return None


def same_vendor(checkpoint: bytes | None, vendor: str) -> tuple[bytes | None, str | None]:
    """The checkpoint to resume from on a CPU of ``vendor``, and why there is none if it was dropped.

    A resume gives a whole run's bits only on the kind of CPU that made the checkpoint (MKL's code paths
    differ by vendor, and L-BFGS-B carries a last-bit difference into another path), so a checkpoint
    whose recorded parts (:func:`harness.cell.checkpoint_segments`) ran on another vendor is not resumed
    here: the cell starts afresh. A checkpoint without a record (older code) is resumed as before.

    Args:
        checkpoint: the checkpoint's bytes, or None.
        vendor: this host's CPU vendor (:func:`harness.kernels.cpu_vendor`; empty where unknown).

    Returns:
        The checkpoint or None, and None or the reason in a few words.
    """
    if checkpoint is None or not vendor:
        return checkpoint, None
    try:
        made_on = {part.get("vendor") for part in checkpoint_segments(checkpoint)} - {None, ""}
    except Exception:  # a checkpoint the cell cannot read reports itself when it resumes
        return checkpoint, None
    if made_on and made_on != {vendor}:
        return None, f"its checkpoint was made on {', '.join(sorted(made_on))}, this CPU is {vendor}"
    return checkpoint, None


def resumed_iteration(checkpoint: bytes | None, vendor: str, spec: CellSpec) -> int | None:
    """The iteration after which a task of ``spec`` on a CPU of ``vendor`` resumes ``checkpoint``, for
    estimates and progress: None where there is none, where it is not one to resume ``spec`` from
    (:func:`checkpoint_problem`: the cell reports that itself) or where the task would drop it
    (:func:`same_vendor`: the cell runs from iteration 0).

    Args:
        checkpoint: the checkpoint's bytes, or None.
        vendor: the CPU vendor of the hosts that run the task; empty where unknown (every readable
            checkpoint then counts).
        spec: the cell.

    Returns:
        The checkpoint's last finished iteration, or None.
    """
    if checkpoint is None or checkpoint_problem(checkpoint, spec) is not None:
        return None
    if same_vendor(checkpoint, vendor)[0] is None:
        return None
    return checkpoint_iteration(checkpoint)


class _CellRun:
    """One BO cell in progress: the shared loop (:class:`algorithms.loop.BOLoop`) plus what only a
    cell has: the benchmark's noisy observations, the true scores of every recommendation, the
    theory recommendation, the rows and the checkpoints."""

    def __init__(self, spec: CellSpec) -> None:
        self.spec = spec
        problem = get_problem(spec.problem, spec.alpha, spec.risk)
        if spec.n_init is not None:  # the study's design instead of the problem's (the loop reads it there)
            problem = dataclasses.replace(problem, n_init=spec.n_init)
        self.problem = problem
        seed_root = derive_seed(spec.problem, spec.seed)
        factory = algorithm_factory(spec.algorithm)
        algorithm = build_algorithm(spec.algorithm, factory, problem, seed_root, risk=spec.risk,
                                    **dict(spec.options))
        self.iterations = problem.iterations if spec.iterations is None else spec.iterations
        self.target = _target(problem, factory, spec.risk)
        # None where the problem declares its optimum unknown: the regret columns are then null
        self.optimum_value = None if problem.optimum is None else problem.optimum.value(self.target)
        self.noise = generator(spec.problem, spec.seed, "noise")
        self.loop = BOLoop(algorithm, seed_root, spec.gp)
        self.start = time.perf_counter()
        self.rows: list[dict] = []
        self.best_lower: float = -math.inf
        self.x_theory: torch.Tensor | None = None  # the x_t of the best lower bound so far
        self.t_fit = 0.0  # seconds of the last model update (set before any row reads it)
        self.report: FitReport | None = None
        self.segments: list[dict] = []  # the hosts of the run's parts (run_cell's ``host``)

    def initial_design(self) -> None:
        """Observe the initial design of (problem, seed) with one noise draw each, and fit."""
        problem = self.problem
        x0, z0 = problem.initial_design(self.spec.seed, not self.loop.algorithm.chooses_z)
        y0 = problem.observe(x0, z0, problem.draw_noise(problem.n_init, self.noise))
        self.update(torch.cat([x0, z0], dim=-1), y0)

    def update(self, queries: torch.Tensor, outcomes: torch.Tensor) -> None:
        """Tell the loop ``k x (d_x + d_z)`` queries and their ``k`` outcomes, timing the model update."""
        t0 = time.perf_counter()
        self.report = self.loop.tell(queries, outcomes)
        self.t_fit = time.perf_counter() - t0

    def resume(self, checkpoint: bytes) -> int:
        """Continue from ``checkpoint`` (of this spec); returns the first iteration still to run."""
        state = _unpack(checkpoint, self.spec)
        self.rows = state["rows"]
        self.best_lower, self.x_theory = state["best_lower"], state["x_theory"]
        self.noise.set_state(state["noise"])
        self.loop.load_state_dict(state)
        self.start -= state["elapsed_s"]
        self.segments = list(state.get("segments", []))
        return self.rows[-1]["iteration"] + 1

    def step(self, t: int) -> dict:
        """Iteration ``t``'s row: for t >= 1 propose, observe with the next noise draw and update
        the model first (iteration 0 is the initial design's recommendation)."""
        row: dict = {"iteration": t, "x": [], "z": [], "y": None}
        if t == 0:
            return self.scored(row, {}, t)
        t0 = time.perf_counter()
        proposal = self.loop.propose()
        row["t_acq_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        y = self.problem.observe(proposal.x, proposal.z, self.problem.draw_noise(None, self.noise))
        row["t_eval_s"] = time.perf_counter() - t0
        row.update(x=proposal.x.tolist(), z=proposal.z.tolist(), y=float(y))
        self.update(torch.cat([proposal.x, proposal.z]).unsqueeze(0), y.reshape(1))
        if proposal.lower_bound is not None and proposal.lower_bound > self.best_lower:
            self.best_lower, self.x_theory = proposal.lower_bound, proposal.x
        return self.scored(row, proposal.info, t)

    def true_values(self, x: torch.Tensor) -> dict[str, float]:
        """The true values of f(x, Z) (``x``: ``d_x``) under the measures :func:`_scored` names."""
        xb = x.unsqueeze(0)
        return {m.name: float(m.of_problem(self.problem, xb)[0]) for m in _scored(self.spec.risk)}

    def regret(self, achieved: float) -> float | None:
        return None if self.optimum_value is None else self.optimum_value - achieved

    def scored(self, row: dict, info: dict, t: int) -> dict:
        """``row`` completed with the recommendation after iteration ``t``, its true scores, the
        proposal's ``info``, the model update's report and the hyperparameters."""
        t0 = time.perf_counter()
        recommendation = self.loop.recommend()
        row["t_rec_s"] = time.perf_counter() - t0
        achieved = self.true_values(recommendation.x)
        model, report = self.loop.fitted_model(), self.report
        assert report is not None  # set by every update since the initial design
        row.update(
            x_rec=recommendation.x.tolist(),
            **{m.column: achieved.get(m.name) for m in RISK_MEASURES.values()},
            regret=self.regret(achieved[self.target]),
            var_mean_rec=recommendation.info.get("var_mean_rec"),
            **{key: info.get(key) for key in ("beta", "lv_count", "var_upper", "var_lower")},
            info=info_json(info) if t > 0 else None,
            t_fit_s=self.t_fit, fit_refit=report.refit, fit_ok=report.ok, fit_message=report.message,
            n_obs=self.loop.n_observations,
            **hyperparameters(model),
        )
        if self.x_theory is not None:
            row.update(x_rec_theory=self.x_theory.tolist(),
                       regret_theory=self.regret(self.true_values(self.x_theory)[self.target]))
        return row

    def checkpoint(self) -> bytes:
        """The whole state after the last row, as bytes (:func:`_pack`)."""
        return _pack({"spec": self.spec.to_json(), "rows": self.rows, **self.loop.state_dict(),
                      "noise": self.noise.get_state(), "best_lower": self.best_lower,
                      "x_theory": self.x_theory, "elapsed_s": time.perf_counter() - self.start,
                      **({"segments": self.segments} if self.segments else {})})

    def result(self) -> CellResult:
        """The rows with the cell's constant columns, and the metadata."""
        spec, optimum = self.spec, self.problem.optimum
        for row in self.rows:
            row.update(problem=spec.problem, algorithm=spec.algorithm, seed=spec.seed,
                       alpha=self.problem.alpha, target=self.target, optimum=self.optimum_value)
        optima = None if optimum is None else {
            "value": self.optimum_value, "lower_bound": optimum.lower_bound,
            **{key: value for m in _scored(spec.risk)
               for key, value in ((m.name, m.optimum(optimum)), (f"argmax_{m.name}", m.argmax(optimum)))}}
        metadata = {
            "spec": spec.to_dict(),
            "kind": "bo",
            "target": self.target,
            "optimum": optima,
            "iterations": self.iterations,
            "wall_time_s": time.perf_counter() - self.start,
            **({"segments": self.segments} if self.segments else {}),
        }
        return CellResult(self.rows, metadata)


def _run_cell(spec: CellSpec, checkpoint: bytes | None,
              on_checkpoint: Callable[[bytes, int], None] | None,
              checkpoint_every_s: float, host: Mapping[str, str] | None) -> CellResult:
    """The loop of :func:`run_cell`: iteration 0 (the initial design's row) or a resume, then the
    iterations, with a checkpoint at most every ``checkpoint_every_s`` seconds."""
    cell = _CellRun(spec)
    if checkpoint is not None:
        first = cell.resume(checkpoint)
    else:
        cell.initial_design()
        first = 0
    if host is not None:
        cell.segments.append({"from": first, **host})
    last_checkpoint = time.perf_counter()
    for t in range(first, cell.iterations + 1):
        cell.rows.append(cell.step(t))
        if (on_checkpoint is not None and t < cell.iterations
                and time.perf_counter() - last_checkpoint >= checkpoint_every_s):
            on_checkpoint(cell.checkpoint(), t)
            last_checkpoint = time.perf_counter()
    return cell.result()
