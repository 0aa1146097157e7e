"""The cells the claims are tested on (:mod:`analysis.claims`): one row of values per cell (its final
and last-iterations log10 regret, its acquisition time, the algorithm the claims know it as and its
non-default settings), and the variants under which two algorithms' cells pair by seed.

A *variant* is the non-default settings of two paired sides (algorithm options, the GP profile
``gp=...``, an alias standing in for another algorithm); ``default`` is the study's configuration.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import numpy as np
import pandas as pd

from harness.study import Study

DEFAULT_OPTIONS = "{}"
DEFAULT_VARIANT = "default"
#: ``last10``: the mean log10 regret over this many final iterations.
LAST_ITERATIONS = 10
#: The statistics of a cell's regret the claims are tested on.
STATISTICS = {"final": "final-iteration log10 regret",
              "last10": f"mean log10 regret over the last {LAST_ITERATIONS} iterations"}


def seeds_text(seeds: Iterable[int]) -> str:
    """The seeds in short, for a report.

    Args:
        seeds: the seeds, in any order, repeats allowed.

    Returns:
        ``3-7`` for a run of more than two consecutive seeds, else the seeds comma-separated (sorted);
        ``none`` for no seed.
    """
    seeds = sorted(set(int(s) for s in seeds))
    if not seeds:
        return "none"
    if seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(map(str, seeds))


def cell_values(frame: pd.DataFrame, aliases: dict[str, str] | None = None,
                reduced: tuple[str, ...] = (),
                fixed: dict[str, dict[str, dict]] | None = None) -> pd.DataFrame:
    """The values the claims are tested on, one row per cell.

    A cell of an algorithm in ``reduced`` whose options hold its declared reduced effort counts as default
    (those options are not settings); one without them is the variant ``effort=full``.

    Args:
        frame: the rows of :func:`analysis.data.load_results`.
        aliases: the study's algorithms that stand in for another one (:class:`harness.study.Study`).
        reduced: the study's algorithms run at their declared reduced effort (its ``reduced_effort``).
        fixed: problem -> algorithm -> options the study sets there (its ``problem_options``): not settings
            either.

    Returns:
        A frame with one row per cell, columns its keys (``problem``, ``target``, ``options``, ``algorithm``,
        ``alpha``, ``iterations``, ``seed``), ``n_rows``, ``final`` (final log10 regret), ``last10`` (mean
        log10 regret over its last :data:`LAST_ITERATIONS` iterations, iteration 0 excluded unless it is all
        there is), ``time`` (median t_acq_s over iterations >= 1, NaN without the column), ``arm`` (the
        algorithm the claims know it as) and ``settings`` (canonical JSON of its non-default settings,
        ``algorithm`` for an alias).
    """
    keys = ["problem", "target", "options", "algorithm", "alpha", "iterations", "seed"]
    frame = frame.copy()
    last = frame.groupby(keys, sort=False, dropna=False)["iteration"].transform("max")
    in_tail = (frame["iteration"] > last - LAST_ITERATIONS) & ((frame["iteration"] >= 1) | (last == 0))
    tail = frame.loc[in_tail]
    grouped = frame.groupby(keys, sort=False, dropna=False)
    cells = grouped.size().rename("n_rows").reset_index()
    finals = frame.loc[frame["iteration"] == last, [*keys, "log10_regret"]].rename(
        columns={"log10_regret": "final"})
    cells = cells.merge(finals, on=keys, how="left")
    means = tail.groupby(keys, sort=False, dropna=False)["log10_regret"].mean().rename("last10").reset_index()
    cells = cells.merge(means, on=keys, how="left")
    steps = frame.loc[frame["iteration"] >= 1]
    if "t_acq_s" in steps:
        times = steps.groupby(keys, sort=False, dropna=False)["t_acq_s"].median().rename("time").reset_index()
        cells = cells.merge(times, on=keys, how="left")
    else:
        cells["time"] = np.nan
    aliases = aliases or {}
    cells["arm"] = cells["algorithm"].map(lambda a: aliases.get(a, a))
    efforts = {(a, p): _reduced_effort(aliases.get(a, a), p) for a, p in
               set(zip(cells["algorithm"], cells["problem"], strict=True)) if aliases.get(a, a) in reduced}
    fixed = fixed or {}
    keys = zip(cells["options"], cells["algorithm"], cells["problem"], strict=True)
    cells["settings"] = [_settings(o, a, aliases, efforts.get((a, p)), fixed.get(p, {}).get(a))
                         for o, a, p in keys]
    return cells


def study_cells(frame: pd.DataFrame, study: Study) -> pd.DataFrame:
    """:func:`cell_values` with ``study``'s aliases, reduced effort and per-problem options.

    Args:
        frame: the rows of :func:`analysis.data.load_results`.
        study: the study whose configuration is the default.

    Returns:
        The frame of :func:`cell_values`, one row per cell.
    """
    return cell_values(frame, study.aliases, study.reduced_effort, study.problem_options)


def cell_settings(options: dict, algorithm: str, problem: str, study: Study) -> str:
    """A cell's non-default settings in ``study``, by the rules of :func:`cell_values`.

    The options ``study`` sets on ``problem`` and the reduced effort it runs ``algorithm`` at are its
    configuration, not settings.

    Args:
        options: the cell's options.
        algorithm: the cell's algorithm (an alias of the study's is a setting).
        problem: the cell's problem.
        study: the study whose configuration is the default.

    Returns:
        The settings as canonical JSON, :data:`DEFAULT_OPTIONS` for the study's own configuration.
    """
    arm = study.aliases.get(algorithm, algorithm)
    effort = _reduced_effort(arm, problem) if arm in study.reduced_effort else None
    return _settings(json.dumps(options, sort_keys=True), algorithm, study.aliases, effort,
                     study.problem_options.get(problem, {}).get(algorithm))


def _reduced_effort(algorithm: str, problem: str) -> dict:
    """The reduced effort ``algorithm`` declares for ``problem``'s kind of Z ({} if none)."""
    from harness.grid import smoke_options  # the engine's own rule, as the grids apply it
    from problems import get_problem

    try:
        continuous = not get_problem(problem).z.is_discrete
    except (KeyError, ValueError):
        return {}
    return smoke_options(algorithm, continuous) or {}


def _settings(options: str, algorithm: str, aliases: dict[str, str], effort: dict | None = None,
              fixed: dict | None = None) -> str:
    settings = json.loads(options)
    if fixed and all(settings.get(k) == v for k, v in fixed.items()):  # the study's, on this problem
        settings = {k: v for k, v in settings.items() if k not in fixed}
    if effort:  # the study runs this algorithm at its reduced effort: that is its default here
        if all(settings.get(k) == v for k, v in effort.items()):
            settings = {k: v for k, v in settings.items() if k not in effort}
        else:
            settings["effort"] = "full"
    if algorithm in aliases:
        settings["algorithm"] = algorithm
    return json.dumps(settings, sort_keys=True)


def variant_label(a: dict, b: dict, named: dict[str, dict] | None = None) -> str:
    """The label of the non-default settings of two paired sides, each named once.

    ``gp=...`` comes first, then an aliased algorithm by name, then options as ``name=value`` (the study's
    named option sets by their name).

    Args:
        a: the settings of side A (the parsed ``settings`` of :func:`cell_values`).
        b: those of side B.
        named: the study's named option sets (name -> options).

    Returns:
        The parts comma-separated; ``default`` when there are none.
    """
    named = named or {}
    a, b = _named(a, named), _named(b, named)
    parts = []
    if "gp" in a:
        parts.append(f"gp={a['gp']}")
    for side in (a, b):
        if "algorithm" in side:
            parts.append(side["algorithm"])
    for side in (a, b):
        for key, value in sorted(side.items()):
            part = key if value is True and key in named else f"{key}={value}"
            if key not in ("gp", "algorithm") and part not in parts:
                parts.append(part)
    return ", ".join(parts) or DEFAULT_VARIANT


def _named(settings: dict, named: dict[str, dict]) -> dict:
    for name, options in named.items():
        if all(settings.get(k) == v for k, v in options.items()):
            settings = {k: v for k, v in settings.items() if k not in options}
            settings[name] = True
    return settings


def _compatible(a: dict, b: dict, shared: set[str]) -> bool:
    return all(a.get(key) == b.get(key) for key in shared)


def variants(cells: pd.DataFrame, problem: str, a: str, b: str, target: str,
             named: dict[str, dict] | None = None) -> list[tuple[str, pd.DataFrame, str]]:
    """Every variant under which ``a`` and ``b`` pair on ``problem``.

    The paired cells are at the (alpha, iterations) with the most pairs. The default variant always comes
    first, empty (not run) when it has no pairs, with a note on what is missing.

    Args:
        cells: the cells of :func:`cell_values`.
        problem: the problem the sides pair on.
        a: side A's algorithm, as the claims know it (``arm``).
        b: side B's.
        target: the risk measure.
        named: the study's named option sets (:func:`variant_label`).

    Returns:
        A list of (label, paired cells, note), the default variant first, then the others with pairs by label.
        The paired cells are a frame with one row per seed, the columns of :func:`cell_values` suffixed ``_a``
        / ``_b`` and ``seed``, ``alpha``, ``iterations``; the note counts the cells without a partner, ``""``
        where every one has one.
    """
    sub = cells.loc[(cells["problem"] == problem) & (cells["target"] == target)]
    cells_a, cells_b = sub.loc[sub["arm"] == a], sub.loc[sub["arm"] == b]
    keys_a = {k for s in cells_a["settings"].unique() for k in json.loads(s)}
    keys_b = {k for s in cells_b["settings"].unique() for k in json.loads(s)}
    shared = (keys_a & keys_b) | {"gp"}
    found: dict[str, tuple[pd.DataFrame, str]] = {}
    for sa, group_a in cells_a.groupby("settings", sort=True):
        for sb, group_b in cells_b.groupby("settings", sort=True):
            da, db = json.loads(sa), json.loads(sb)
            if not _compatible(da, db, shared):
                continue
            merged = group_a.merge(group_b, on=["alpha", "iterations", "seed"], suffixes=("_a", "_b"))
            note = ""
            if not merged.empty:
                sizes = merged.groupby(["alpha", "iterations"]).size()
                alpha, iterations = sizes.idxmax()
                merged = merged.loc[(merged["alpha"] == alpha) & (merged["iterations"] == iterations)]
                unpaired = len(group_a) + len(group_b) - 2 * len(merged)
                if unpaired:
                    note = f"{unpaired} cell(s) without a partner seed or at another alpha/T"
            found[variant_label(da, db, named)] = (merged.reset_index(drop=True), note)
    out = []
    if DEFAULT_VARIANT in found and not found[DEFAULT_VARIANT][0].empty:
        out.append((DEFAULT_VARIANT, *found.pop(DEFAULT_VARIANT)))
    else:
        found.pop(DEFAULT_VARIANT, None)
        notes = []
        for name, side in ((a, cells_a), (b, cells_b)):
            default = side.loc[side["settings"] == DEFAULT_OPTIONS]
            if default.empty:
                other = len(side)
                notes.append(f"no {name} cells on {problem} (target {target})"
                             + (f" with default settings ({other} with other settings)" if other else ""))
        out.append((DEFAULT_VARIANT, pd.DataFrame(), "; ".join(notes)))
    out += [(label, merged, note) for label, (merged, note) in sorted(found.items()) if not merged.empty]
    return out
