"""What a grid run will do (:class:`Plan`) as ``--dry-run`` prints it: one line per group of cells
with the cells in each state and their estimated CPU minutes (:func:`print_groups`; with
``--verbose`` every cell too), or the plan as JSON for other schedulers (:func:`plan_json`); and the
texts they share with the run itself (the cells not available, durations).
"""

from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import dataclass, field

from algorithms import algorithm_factory
from algorithms.cost import DEFAULT_ITERATION_S
from harness.cell import CellSpec
from harness.estimates import calibration
from harness.grid_cells import (
    BELOW_MIN_MASS,
    Grid,
    GridError,
    alpha_below_min_mass,
    cell_label,
    unavailable_reason,
)
from harness.results import Location, cell_path, spec_hash
from problems import build_problem


def print_unavailable(cells: list[CellSpec]) -> None:
    """The cells not available, by problem and algorithm, with the reason."""
    groups = Counter((c.problem, c.algorithm, unavailable_reason(c)) for c in cells)
    print(f"not available ({len(cells)} cells; they run once registered):")
    for (problem, algorithm, reason), n in groups.items():
        print(f"  {problem} x {algorithm}: {n} cells ({reason})")


#: The columns of the dry run's table of groups: (heading, state counted), in order.
STATE_COLUMNS = (("done", "done"), ("to run", "to run"), ("failed", "failed"),
                 ("missing", "missing"), ("n/a", "not available"))


def group_key(spec: CellSpec) -> tuple:
    """The key of the cells of one line of the dry run: all but the seed in common.

    Args:
        spec: the cell.

    Returns:
        (problem, algorithm, alpha, options, gp, risk, iterations, kind) of the cell.
    """
    return (spec.problem, spec.algorithm, spec.alpha, spec.options, spec.gp, spec.risk, spec.iterations,
            spec.kind)


def problem_defaults(name: str) -> tuple[float, int] | None:
    """The problem's default alpha and iterations.

    Args:
        name: the problem's name.

    Returns:
        (alpha, iterations), or None where the problem does not build here.
    """
    try:
        problem = build_problem(name, with_optimum=False)
    except (KeyError, ValueError):
        return None
    return problem.alpha, problem.iterations


def alpha_text(problem: str, alpha: float | None) -> str:
    """A dry run's alpha.

    Args:
        problem: the cell's problem.
        alpha: the cell's alpha, None for the problem's own.

    Returns:
        ``-`` for None; ``below-min-mass (3.957e-13)`` where it is the grid's alpha -> 0 setting (half the
        problem's smallest mass), the grid file's name for it; else the number.
    """
    if alpha is None:
        return "-"
    try:
        below = alpha == alpha_below_min_mass(problem)
    except (GridError, KeyError, ValueError):  # a continuous Z, or a problem that does not build here
        below = False
    return f"{BELOW_MIN_MASS} ({alpha:.4g})" if below else f"{alpha:.4g}"


def print_groups(cells: list[CellSpec], shown: dict[CellSpec, str], cost: dict[CellSpec, float]) -> None:
    """One line per :func:`group_key` group (in the grid's order): its problem, algorithm, alpha and
    iterations (the problem's where the grid sets none), GP profile, risk measure, the cells in each state and
    the estimated CPU minutes of those to run, and its options; then the totals. ``missing`` is a
    column only where some cell is neither done, failed, unavailable nor to run (``--retry-failed``
    leaves the missing ones)."""
    def minutes_text(seconds: float) -> str:  # two digits at least: a cell takes a second or more
        minutes = seconds / 60
        return "-" if not seconds else f"{minutes:.2f}" if minutes < 1 else f"{minutes:.1f}"

    groups: dict[tuple, list[CellSpec]] = {}
    for spec in cells:
        groups.setdefault(group_key(spec), []).append(spec)
    defaults = {name: problem_defaults(name) for name in {spec.problem for spec in cells}}
    states = [(heading, state) for heading, state in STATE_COLUMNS
              if state != "missing" or "missing" in shown.values()]
    rows = []
    for members in groups.values():
        spec = members[0]
        known = defaults[spec.problem]
        alpha = spec.alpha if spec.alpha is not None else known[0] if known else None
        iterations = spec.iterations if spec.iterations is not None else known[1] if known else None
        if spec.kind != "bo":  # a timing cell runs no BO iterations
            iterations = None
        counts = Counter(shown[c] for c in members)
        seconds = sum(cost.get(c, 0.0) for c in members)
        options = " ".join(f"{name}={value}" for name, value in spec.options)
        if spec.kind != "bo":
            options = f"[{spec.kind}] {options}".rstrip()
        rows.append([spec.problem, spec.algorithm, alpha_text(spec.problem, alpha),
                     "-" if iterations is None else str(iterations), spec.gp, spec.risk,
                     *(str(counts[state]) for _, state in states),
                     minutes_text(seconds), options])
    total = Counter(shown.values())
    rows.append(["total", f"{len(groups)} groups", "", "", "", "",
                 *(str(total[state]) for _, state in states),
                 minutes_text(sum(cost.values())), ""])
    header = ["problem", "algorithm", "alpha", "T", "gp", "risk", *(h for h, _ in states), "CPU min",
              "options"]
    right = {2, 3, *range(6, len(header) - 1)}  # numbers
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        cells_text = [text.rjust(width) if i in right else text.ljust(width)
                      for i, (text, width) in enumerate(zip(row, widths, strict=True))]
        print("  ".join(cells_text).rstrip())


def duration_text(seconds: float) -> str:
    """Seconds as people read a cost.

    Args:
        seconds: the duration.

    Returns:
        ``42 s`` below 90 s, ``11.2 min`` below 90 min, else ``5.9 h``.
    """
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


@dataclass
class Plan:
    """What a grid run will do: each cell's state on disk, the cells to run and their estimated
    seconds (of what is left of those that resume), the estimate as text, the measured rates, the
    iterations each cell that resumes from a checkpoint has done, and the cells' whole estimated
    seconds (as if none resumed: what the runner's ETA starts from; ``costs`` where none resumes)."""

    states: dict[CellSpec, str]
    to_run: list[CellSpec]
    costs: list[float]
    estimate: str
    rates: dict
    resumed: dict[CellSpec, int] = field(default_factory=dict)
    whole_costs: list[float] = field(default_factory=list)


def plan_json(grid: Grid, cells: list[CellSpec], out: Location, plan: Plan) -> dict:
    """The plan as plain data, for ``--dry-run --json``.

    Args:
        grid: the grid.
        cells: its cells, in its order.
        out: the results folder.
        plan: the run's plan.

    Returns:
        A JSON-ready dict with ``grid``, ``out``, ``to_run``, ``estimate_cpu_s`` and ``cells``, one entry per
        cell (in the grid's order) with its ``label``, ``spec`` (:meth:`CellSpec.to_dict`), ``hash``,
        ``path``, ``state`` ("to run", "done", "failed", "missing" when not chosen, "not available"),
        ``estimate_s`` (null when it will not run) and ``resumes_after`` (the iterations its checkpoint
        holds, null where it has none or will not run).
    """
    cost = dict(zip(plan.to_run, plan.costs, strict=True))
    return {"grid": grid.name, "out": str(out), "to_run": len(plan.to_run),
            "estimate_cpu_s": round(sum(plan.costs), 1),
            "cells": [{"label": cell_label(spec), "spec": spec.to_dict(), "hash": spec_hash(spec),
                       "path": str(cell_path(out, spec)),
                       "state": "to run" if spec in cost else plan.states[spec],
                       "estimate_s": round(cost[spec], 1) if spec in cost else None,
                       "resumes_after": plan.resumed.get(spec) if spec in cost else None} for spec in cells]}


def print_dry_run(args: argparse.Namespace, cells: list[CellSpec], out: Location, plan: Plan) -> None:
    """Print what a run would do: per group (and with --verbose per cell) the state and estimate."""
    cost = dict(zip(plan.to_run, plan.costs, strict=True))
    shown = {spec: "to run" if spec in cost else plan.states[spec] for spec in cells}
    if args.verbose:
        for spec in cells:
            seconds = f"  ~{cost[spec]:.0f} s" if spec in cost else ""
            print(f"  {shown[spec]:13s} {cell_label(spec)}{seconds}")
    print_groups(cells, shown, cost)
    if plan.rates:
        print(f"cost: the measured seconds per iteration of the finished cells in {out} for "
              f"{len(plan.rates)} (problem, algorithm, options, risk) group(s) (scaled by the algorithm's "
              "declared cost model for a pair's other options or risk measures), the declared model for the "
              "rest")
    for line in [*calibration_lines(plan), *guess_lines(plan)]:
        print(line)
    print(f"to run: {len(plan.to_run)} cells, {plan.estimate} (estimate)")


def resumed_line(resumed: dict[CellSpec, int]) -> str:
    """The line on the cells that resume from checkpoints: how many, and that only their iterations
    after the checkpoint are priced.

    Args:
        resumed: each such cell -> the iterations its checkpoint holds.

    Returns:
        The line.
    """
    return (f"resume: {len(resumed)} cell(s) from their checkpoints ({sum(resumed.values())} iterations "
            "done in all), priced for the iterations after them only")


def calibration_lines(plan: Plan) -> list[str]:
    """One line per algorithm among the cells to run that is priced on problems without a finished
    cell by the factor measured on its other problems (:func:`harness.estimates.calibration`): the
    factor, where it came from, and on how many problems it is applied, so that a reader can judge
    a factor that belongs to one problem.

    Args:
        plan: the run's plan (its cells to run and the measured rates).

    Returns:
        The lines, empty where no estimate is scaled that way.
    """
    factors: dict[str, list[float]] = {}
    sources: dict[str, tuple[str, ...]] = {}
    problems: dict[str, set[str]] = {}
    for spec in plan.to_run:
        found = calibration(spec, plan.rates) if spec.kind == "bo" and plan.rates else None
        if found is not None:  # the factor depends a little on the cell (its risk measure, its T)
            factors.setdefault(spec.algorithm, []).append(found[0])
            sources[spec.algorithm] = found[1]
            problems.setdefault(spec.algorithm, set()).add(spec.problem)
    lines = []
    for name in sorted(factors):
        low, high = min(factors[name]), max(factors[name])
        factor = f"{low:.2f}" if high - low < 0.005 else f"{low:.2f}-{high:.2f}"
        lines.append(f"scaled: {name} on {len(problems[name])} problem(s) with no finished cell of it is "
                     f"priced at {factor} times its declared rate, the factor its finished cells measured "
                     f"on {', '.join(sources[name])}; the declared model's error can differ by problem")
    return lines


def guess_lines(plan: Plan) -> list[str]:
    """One line per algorithm among the cells to run whose estimate is a guess: it declares no cost
    model (``iteration_seconds`` on its class, :mod:`algorithms.cost`) and no finished cell of it
    was measured, so its iterations are priced at :data:`algorithms.cost.DEFAULT_ITERATION_S`.

    Args:
        plan: the run's plan (its cells to run and the measured rates).

    Returns:
        The lines, empty where every estimate comes from a declared model or a measurement.
    """
    measured = {key[1] for key in plan.rates}
    guessed: dict[str, int] = {}
    for spec in plan.to_run:
        if spec.kind != "bo" or spec.algorithm in measured:
            continue
        try:
            declared = getattr(algorithm_factory(spec.algorithm), "iteration_seconds", None) is not None
        except (KeyError, ValueError):  # not importable here: priced as a guess too
            declared = False
        if not declared:
            guessed[spec.algorithm] = guessed.get(spec.algorithm, 0) + 1
    return [f"guess: {name} ({n} cells) declares no cost model, so its iterations are priced at "
            f"{DEFAULT_ITERATION_S} s each, a default that may be off several times; declare one "
            "(a static iteration_seconds(size, options) on its class: docs/how-to/own-algorithm.md), "
            "or run a few of its cells first: the dry run then prices the rest at their measured rate"
            for name, n in sorted(guessed.items())]

