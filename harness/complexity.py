"""Timing cells: how one acquisition step and one GP fit cost grows with |D| and |Dz|.

A timing cell is a :class:`~harness.cell.CellSpec` of kind ``"timing"``; its options carry the
controlled state (:data:`STATE_OPTIONS`) next to the algorithm's own options:

* ``n_obs`` = |D|: the GP is fitted on that many noisy observations of the problem's f at (x, z)
  drawn uniformly (x in [0, 1]^d_x, z in the box of Z's support) from a stream of
  (problem, ``n_obs``, seed) only, so every method and every |Dz| sees the same data;
* ``n_z`` = |Dz|: for a discrete Z, the problem's Z is replaced by the synthetic problems' Gaussian
  grid with ``n_z`` points (``n_z ** (1 / d_z)`` per axis); for a continuous Z, ``n_z`` is the number
  of Z samples the method draws per estimate (the options the algorithm declares in
  :attr:`algorithms.Algorithm.z_sample_options`);
* ``repeats``: timed calls of each kind, after one untimed warm-up call.

``run_timing_cell(spec)`` is pure like :func:`harness.cell.run_cell` (no Ray, no I/O) and returns
one row per timed call, with wall seconds and process CPU seconds, on one torch thread:

* ``what = "fit"``: a maximum-likelihood fit from scratch, as at a refit;
* ``what = "acquisition"``: one ``propose``, what an iteration costs; its search makes a number of
  evaluations that depends on the state (L-BFGS-B stops when it converges), so these curves are
  not clean power laws;
* ``what = "evaluation"``: one evaluation of the method's acquisition function
  (:meth:`algorithms.Algorithm.acquisition_function`) on a fixed batch of
  ``evaluation_batch`` candidates (declared by the algorithm), after its per-iteration
  setup: the fixed work a study's cost formulas count once per evaluated candidate. Methods without
  such a function (``acquisition_function`` returns None) have none.

The queries do not matter here and are not stored; the timings are the result. Which methods are
timed, on which problem and at which options, is a study's (its complexity grid, built by
:func:`complexity_cells`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import replace

import torch

from algorithms import Algorithm, algorithm_factory, build_algorithm, z_kind
from algorithms.gp import fit_gp
from harness.spec import CellResult, CellSpec
from problems import Problem, build_problem, z_kind_of
from problems.checks import positive_int
from problems.distributions import gaussian_grid
from problems.float64 import default_float64
from problems.seeding import derive_seed, generator

#: Options of a timing cell that set the state rather than the algorithm.
STATE_OPTIONS = ("n_obs", "n_z", "repeats")
DEFAULT_REPEATS = 5
#: Candidates per timed evaluation of an acquisition function: the algorithm's ``evaluation_batch``,
#: e.g. hundreds of x for a method that scores raw samples, or a few (x, w) for one whose candidates
#: carry fantasy samples (|S| K M |Dz| numbers each), to bound memory at |Dz| = 1024.


class TimingSpecError(ValueError):
    """A timing cell whose state options are missing or invalid."""


def state_of(spec: CellSpec) -> tuple[int, int, int, dict]:
    """The controlled state of a timing cell and the algorithm's own options.

    Args:
        spec: the timing cell.

    Returns:
        (``n_obs``, ``n_z``, ``repeats``, the algorithm's options), ``repeats`` :data:`DEFAULT_REPEATS` where
        the cell sets none.

    Raises:
        TimingSpecError: a missing ``n_obs`` or ``n_z``, or a state option that is not a positive integer.
    """
    options = dict(spec.options)
    try:
        n_obs, n_z = options.pop("n_obs"), options.pop("n_z")
    except KeyError as missing:
        raise TimingSpecError(f"a timing cell needs the option {missing.args[0]}") from None
    repeats = options.pop("repeats", DEFAULT_REPEATS)
    for name, value in (("n_obs", n_obs), ("n_z", n_z), ("repeats", repeats)):
        try:
            positive_int("timing option", name, value)
        except ValueError as error:
            raise TimingSpecError(str(error)) from None
    return n_obs, n_z, repeats, options


def timed_problem(spec: CellSpec) -> tuple[Problem, dict]:
    """The problem of a timing cell and the algorithm options its ``|Dz|`` implies (module docstring).

    Args:
        spec: the timing cell.

    Returns:
        (problem, options), the problem's discrete Z replaced by a Gaussian grid of ``n_z`` points, or for a
        continuous Z the options with every Z-sample option of the algorithm set to ``n_z``; the cell's alpha
        set where it has one.

    Raises:
        TimingSpecError: a bad state (:func:`state_of`), an ``n_z`` that is not a ``d_z``-th power on a
            discrete Z, or an algorithm that declares no Z-sample option on a continuous one.
    """
    _, n_z, _, options = state_of(spec)
    problem = build_problem(spec.problem, with_optimum=False)
    if problem.z.is_discrete:
        per_axis = round(n_z ** (1.0 / problem.d_z))
        if per_axis**problem.d_z != n_z:
            raise TimingSpecError(f"n_z={n_z} is not a {problem.d_z}-th power: {spec.problem} has a "
                                  f"{problem.d_z}-dimensional grid")
        problem = replace(problem, z=gaussian_grid(per_axis, problem.d_z))
    else:
        names = algorithm_factory(spec.algorithm).z_sample_options
        if not names:
            raise TimingSpecError(f"{spec.algorithm}: no option says how many Z samples it draws")
        options = {**options, **dict.fromkeys(names, n_z)}
    if spec.alpha is not None:
        problem = replace(problem, alpha=spec.alpha)
    return problem, options


def observations(spec: CellSpec) -> tuple[torch.Tensor, torch.Tensor]:
    """The data the timing cell's GP is fitted on, from a stream of (problem, ``n_obs``, seed) only.

    Args:
        spec: the timing cell.

    Returns:
        (inputs, outcomes), an ``n_obs x (d_x + d_z)`` tensor of (x, z) drawn uniformly and an ``n_obs x 1``
        tensor of noisy outcomes, float64.
    """
    n_obs = state_of(spec)[0]
    problem = build_problem(spec.problem, with_optimum=False)
    g = generator(spec.problem, "complexity", n_obs, spec.seed)
    x = torch.rand(n_obs, problem.d_x, generator=g, dtype=torch.float64)
    if problem.z.is_discrete:  # the grid spans [0, 1]^d_z whatever its size
        z = torch.rand(n_obs, problem.d_z, generator=g, dtype=torch.float64)
    else:
        z = problem.z.sample_support(n_obs, g)
    y = problem.observe(x, z, problem.draw_noise(n_obs, g))
    return torch.cat([x, z], dim=-1), y.unsqueeze(-1)


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def run_timing_cell(spec: CellSpec) -> CellResult:
    """Time ``repeats`` GP fits and ``repeats`` proposals of ``spec.algorithm``; see the module docstring.

    It runs on one torch thread (restored after) with float64 as the default dtype.

    Args:
        spec: the timing cell.

    Returns:
        The cell's :class:`~harness.spec.CellResult`, one row per timed call (``what``, ``repeat``,
        ``seconds``, ``cpu_seconds``, ...) and its metadata.

    Raises:
        TimingSpecError: a cell that is not a timing cell, or a bad state (:func:`state_of`).
    """
    if spec.kind != "timing":
        raise TimingSpecError(f"not a timing cell: kind {spec.kind!r}")
    algorithm_factory(spec.algorithm)  # KeyError or ValueError before any work
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with default_float64():
            return _run(spec)
    finally:
        torch.set_num_threads(threads)


def _run(spec: CellSpec) -> CellResult:
    start = time.perf_counter()
    n_obs, n_z, repeats, _ = state_of(spec)
    problem, options = timed_problem(spec)
    train_X, train_Y = observations(spec)
    fit_seed = derive_seed(spec.problem, "complexity-fit", n_obs, spec.seed)
    rows: list[dict] = []

    def record(what: str, repeat: int, wall: float, cpu: float) -> None:
        rows.append({"what": what, "repeat": repeat, "seconds": wall, "cpu_seconds": cpu})

    model = None
    for repeat in range(repeats + 1):  # repeat 0 is the warm-up
        g = torch.Generator().manual_seed(fit_seed)  # every fit does the same work
        w0, c0 = _clock()
        model, report = fit_gp(train_X, train_Y, None, refit=True, generator=g)
        w1, c1 = _clock()
        if not report.ok:
            raise RuntimeError(f"the GP fit failed on the timing state: {report.message}")
        if repeat:
            record("fit", repeat, w1 - w0, c1 - c0)
    assert model is not None
    factory = algorithm_factory(spec.algorithm)
    algorithm = build_algorithm(spec.algorithm, factory, problem, derive_seed(spec.problem, spec.seed),
                                **options)
    t = max(1, n_obs - problem.n_init)  # the iteration this |D| would be (beta_t depends on it)
    for repeat in range(repeats + 1):
        w0, c0 = _clock()
        algorithm.propose(model, t)
        w1, c1 = _clock()
        if repeat:
            record("acquisition", repeat, w1 - w0, c1 - c0)
    function = algorithm.acquisition_function(model, t)
    if function is not None:
        batch = factory.evaluation_batch
        q = problem.d_x + problem.d_z if factory.candidates == "xz" else problem.d_x
        sobol = torch.quasirandom.SobolEngine(q, scramble=True, seed=derive_seed(fit_seed, "eval") % 2**31)
        X = sobol.draw(batch, dtype=torch.float64)
        if q > problem.d_x and problem.z.is_discrete:  # an (x, w) candidate's w: support points
            X[:, problem.d_x:] = problem.z.points[(X[:, -1] * problem.z.size).long().clamp(
                max=problem.z.size - 1)]
        elif q > problem.d_x:  # in the support box
            low, high = problem.z.bounds
            X[:, problem.d_x:] = low + (high - low) * X[:, problem.d_x:]
        with torch.no_grad():
            for repeat in range(repeats + 1):
                w0, c0 = _clock()
                function(X)
                w1, c1 = _clock()
                if repeat:
                    record("evaluation", repeat, w1 - w0, c1 - c0)
    for row in rows:
        row.update(problem=spec.problem, algorithm=spec.algorithm, seed=spec.seed, n_obs=n_obs,
                   n_z=n_z, z_kind=z_kind(problem),
                   threads=torch.get_num_threads())
    metadata = {"spec": spec.to_dict(), "kind": "timing", "options_used": options,
                "wall_time_s": time.perf_counter() - start}
    return CellResult(rows, metadata)


def estimate_proposal_seconds(problem: str, algorithm: str, n_obs: int, n_z: int) -> float:
    """Rough single-core seconds of one proposal.

    The estimate comes from what the algorithm declares (:meth:`algorithms.Algorithm.proposal_cost`) for the
    problem's kind of Z; an algorithm that does not import here is priced as the default.

    Args:
        problem: the problem's name.
        algorithm: the algorithm's name.
        n_obs: ``|D|``.
        n_z: ``|Dz|``.

    Returns:
        The seconds, fixed + scale (n_obs / 40)^d_exp (n_z / 64)^z_exp.
    """
    try:
        factory: type[Algorithm] = algorithm_factory(algorithm)
    except (KeyError, ValueError):  # a name that cannot run: the cell reports why; guess the default
        factory = Algorithm
    fixed, scale, d_exp, z_exp = factory.proposal_cost(z_kind_of(problem))
    return fixed + scale * (n_obs / 40) ** d_exp * (n_z / 64) ** z_exp


def estimate_timing_seconds(spec: CellSpec) -> float:
    """Rough single-core seconds of a timing cell: ``repeats + 1`` fits and proposals.

    Args:
        spec: the timing cell.

    Returns:
        The seconds.

    Raises:
        TimingSpecError: a bad state (:func:`state_of`).
    """
    n_obs, n_z, repeats, _ = state_of(spec)
    fit = 0.05 + 0.1 * (n_obs / 160) ** 2
    return (repeats + 1) * (fit + estimate_proposal_seconds(spec.problem, spec.algorithm, n_obs, n_z))


#: The default sizes: |D| and |Dz|.
SIZES_D = (10, 20, 40, 80, 160)
SIZES_Z = (16, 64, 256, 1024)
#: A (method, |D|, |Dz|) is timed when one proposal is estimated to take at most this many seconds
#: (:func:`estimate_proposal_seconds`): the cells beyond it would take hours. Where the study stops
#: for a method is in the grid's listing (``--dry-run``) and in the report.
MAX_PROPOSAL_S = 60.0


def complexity_cells(methods: Iterable[tuple[str, str, dict]], sizes_d: tuple[int, ...] = SIZES_D,
                     sizes_z: tuple[int, ...] = SIZES_Z, repeats: int = DEFAULT_REPEATS,
                     max_proposal_s: float = MAX_PROPOSAL_S) -> list[CellSpec]:
    """The timing cells of ``methods`` over ``|D|`` x ``|Dz|`` (seed 0), those estimated feasible.

    A method is an algorithm on a problem's function, its Z replaced by a grid of ``|Dz|`` points or sampled
    ``|Dz|`` times.

    Args:
        methods: a study's (problem, algorithm, options).
        sizes_d: the sizes of ``|D|``.
        sizes_z: the sizes of ``|Dz|``.
        repeats: the timed calls of each kind per cell.
        max_proposal_s: a (method, ``|D|``, ``|Dz|``) is timed when one proposal is estimated to take at most
            this many seconds (:func:`estimate_proposal_seconds`).

    Returns:
        The cells, method by method, then by ``|D|`` and ``|Dz|``.
    """
    cells = []
    for problem, algorithm, options in methods:
        for n_obs in sizes_d:
            for n_z in sizes_z:
                if estimate_proposal_seconds(problem, algorithm, n_obs, n_z) <= max_proposal_s:
                    state = {"n_obs": n_obs, "n_z": n_z, "repeats": repeats}
                    cells.append(CellSpec.make(problem, algorithm, 0, options={**options, **state},
                                               kind="timing"))
    return cells
