"""Figures laid out as the study's figure declarations say: regret curves with 70 % bands, and the
timing comparison.

Each of the study's figures (:class:`harness.study.Figure`: its problems, its grid of panels, the
risk measure whose regret it shows, whether it is drawn when none of its cells ran), and "other" for
any problem or setting no figure of the study draws. A panel is one (problem, alpha, target); a
study's figure shows each problem at the alpha with the most cells, any other alpha goes to "other".
One colour per algorithm in every figure.

The series' colours, labels and markers are :mod:`analysis.figure_styles`'; the layout of a figure
and the check it passes as it is saved, :mod:`analysis.figure_layout`'s.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.ticker import MaxNLocator

from analysis.complexity import FIT_METHOD
from analysis.figure_layout import fit_suptitle, legend_and_key, log_ticks, save_figure
from analysis.figure_styles import SeriesStyle
from harness.study import Figure
from problems.measures import DEFAULT_RISK, RISK_MEASURES, WORST_CASE, risk_measure

OTHER = "fig_other"


def assign_figures(bands: pd.DataFrame, figures: tuple[Figure, ...] = ()) -> pd.DataFrame:
    """The panels of a report's figures: which figure shows each (problem, alpha, target), and where.

    A study's figure shows, of each of its problems, the alpha with the most cells (the smallest alpha of
    those); every other panel goes to the "other" figure (:data:`OTHER`).

    Args:
        bands: the band table (:func:`analysis.bands.band_table`).
        figures: the study's figures.

    Returns:
        A frame with one row per (problem, alpha, target) of ``bands``, columns ``problem``, ``alpha``,
        ``target``, ``cells`` (the seeds of iteration 0 summed over the series), ``figure`` (its name) and
        ``position`` (index in the layout of the study's figure that shows it, or in the "other" figure).
    """
    panels = (bands.loc[bands["iteration"] == 0].groupby(["problem", "alpha", "target"])["n_seeds"].sum()
              .rename("cells").reset_index())
    figure = pd.Series(OTHER, index=panels.index)
    position = pd.Series(-1, index=panels.index)
    for spec in figures:
        mine = panels.loc[panels["problem"].isin(spec.problems) & (panels["target"] == spec.target)]
        if mine.empty:
            continue
        best = mine.sort_values(["cells", "alpha"], ascending=[False, True]).groupby("problem").head(1)
        figure[best.index] = spec.name
        position[best.index] = [spec.problems.index(p) for p in best["problem"]]
    panels["figure"] = figure
    other = panels["figure"] == OTHER
    panels.loc[other, "position"] = np.arange(int(other.sum()))
    panels.loc[~other, "position"] = position[~other]
    panels["position"] = panels["position"].astype(int)
    return panels


# ---------------------------------------------------------------------------------------------------
# regret figures


def regret_label(target: str, best_found: bool = False) -> str:
    """The y label of a regret panel.

    The regret is against the optimum, or against the best value found in the folder when the problem's
    optimum is unknown (:func:`analysis.data.regret_against_best_found`).

    Args:
        target: the risk measure (VaR, the default, is not named).
        best_found: whether the regret is against the best value found.

    Returns:
        The label, e.g. ``log10 regret`` or ``log10 CVaR regret vs best found in folder``.
    """
    label = "log10 regret" if target == DEFAULT_RISK else f"log10 {risk_measure(target).label} regret"
    return label + " vs best found in folder" if best_found else label


def _seeds_text(counts: list[tuple[str, int]]) -> str:
    """``n=10``, or each series' seeds where they differ: a mean over 1 seed is not one over 3."""
    values = {n for _, n in counts}
    if len(values) == 1:
        return f"n={values.pop()}"
    return "n: " + ", ".join(f"{label} {n}" for label, n in counts)


def _draw_panel(ax, bands: pd.DataFrame, problem: str, alpha: float, target: str,
                styles: dict[tuple[str, str], SeriesStyle], show_alpha: bool, ylabel: str | None = None,
                show_floor: bool = True, expected: tuple[str, ...] = ()
                ) -> dict[tuple[str, str, int | None], object]:
    """Draw one panel; returns its lines by series (algorithm, options, iterations), iterations None
    unless the panel has the series at several numbers of iterations. Its title gives the seeds
    (each series' where they differ) and names the ``expected`` algorithms it lacks."""
    panel = bands.loc[(bands["problem"] == problem) & (bands["alpha"] == alpha) & (bands["target"] == target)]
    groups = list(panel.groupby(["algorithm", "options", "iterations"], sort=True))
    lines: dict[tuple[str, str, int | None], object] = {}
    seeds, floors = [], []
    for i, ((algorithm, options, iterations), series) in enumerate(groups):
        style = styles[algorithm, options]
        last = series.iloc[-1]
        seeds.append((style.label, int(last["n_seeds"])))
        if show_floor and last["n_floor"]:
            floors.append(f"{style.label} {int(last['n_floor'])}")
        it = series["iteration"].to_numpy()
        # markers a few per line, each series at its own offset: lines that coincide (two algorithms
        # that make the same queries) still show every series
        every = max(1, len(it) // 6)
        offset = (i * every) // max(1, len(groups))
        several_t = (panel.loc[(panel["algorithm"] == algorithm) & (panel["options"] == options),
                               "iterations"].nunique() > 1)
        lines[algorithm, options, int(iterations) if several_t else None] = ax.plot(
            it, series["mean"].to_numpy(), color=style.colour, linestyle=style.linestyle,
            marker=style.marker, markevery=(offset, every), markersize=5, markerfacecolor="none",
            linewidth=1.5)[0]
        ax.fill_between(it, series["lower"].to_numpy(), series["upper"].to_numpy(), color=style.colour,
                        alpha=0.15, linewidth=0)
    title = problem + (f", alpha={alpha:.4g}" if show_alpha else "")
    if seeds:
        title += f" ({_seeds_text(seeds)})"
    title = textwrap.fill(title, 60)  # a long import path of the user's own problem
    missing = [a for a in expected if a not in set(panel["algorithm"])]
    if missing:  # what the figure should show here and does not (yet)
        title += "\n" + textwrap.fill("missing: " + ", ".join(missing), 70)
    if floors:  # the rest of a series' seeds are above the floor: its mean is not the floor
        title += "\n" + textwrap.fill("at the floor at the end: " + ", ".join(floors), 70)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("iteration")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(ylabel or regret_label(target))
    ax.grid(True, alpha=0.3)
    return lines


def _empty_panel(ax, problem: str, text: str = "not run") -> None:
    ax.set_title(problem, fontsize=9)
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="grey")
    ax.set_xticks([])
    ax.set_yticks([])


def _legend_entries(lines: dict[tuple[str, str, int | None], object],
                    styles: dict[tuple[str, str], SeriesStyle]) -> tuple[list, list[str], list[str]]:
    """One legend entry per series drawn anywhere in a figure (with ``T=`` where a panel has the
    series at several numbers of iterations), and the key table lines of those series."""
    handles, labels, key_lines = [], [], []
    for (algorithm, options, iterations), line in sorted(
            lines.items(), key=lambda kv: (kv[0][0], kv[0][1] != "{}", kv[0][1], kv[0][2] or -1)):
        style = styles[algorithm, options]
        label = style.label + ("" if iterations is None else f" T={iterations}")
        if label in labels:  # two series a study shows alike (its default on two kinds of Z)
            continue
        handles.append(line)
        labels.append(label)
        if style.key and _key_line(style, algorithm) not in key_lines:
            key_lines.append(_key_line(style, algorithm))
    return handles, labels, key_lines


def _key_line(style: SeriesStyle, algorithm: str) -> str:
    """A line of the key table: ``[A] ALGORITHM: maxiter=100, raw_per_restart=10``."""
    return f"{style.key} {algorithm}: {style.options_text}"


PANEL_SIZE_IN = (5.2, 3.9)


def _regret_figure(keys: list[tuple[str, float, str] | None], titles: list[str], shape: tuple[int, int],
                   bands: pd.DataFrame, styles: dict[tuple[str, str], SeriesStyle], show_alpha: bool,
                   ylabels: list[str | None], title: str, show_floor: bool = True,
                   expected: list[tuple[str, ...]] | None = None, empty: list[str] | None = None):
    """A figure of regret panels (``None`` keys are drawn with their title and their entry of
    ``empty``, default "not run") with one legend and key table for all of them; each panel names
    the algorithms of its entry of ``expected`` (one per key) that it lacks."""
    rows, cols = shape
    width, height = max(7.0, PANEL_SIZE_IN[0] * cols), PANEL_SIZE_IN[1] * rows + 0.4
    fig, axes = plt.subplots(rows, cols, figsize=(width, height), squeeze=False)
    lines: dict[tuple[str, str, int | None], object] = {}
    expected = expected if expected is not None else [()] * len(keys)
    empty = empty if empty is not None else ["not run"] * len(keys)
    for ax, key, name, ylabel, wanted, text in zip(axes.flat, keys, titles, ylabels, expected, empty,
                                                   strict=False):
        if key is None:
            _empty_panel(ax, name, text)
        else:
            lines.update(_draw_panel(ax, bands, *key, styles, show_alpha=show_alpha, ylabel=ylabel,
                                     show_floor=show_floor, expected=wanted))
    for ax in list(axes.flat)[len(keys):]:
        ax.set_visible(False)
    handles, labels, key_lines = _legend_entries(lines, styles)
    legend_and_key(fig, handles, labels, key_lines, width, height, title)
    return fig


def figure_title(spec: Figure, algorithms: list[str]) -> str:
    """The title of a study's figure as drawn.

    A worst-case figure names the methods it shows (it is the alpha -> 0 study only where they ran below the
    smallest mass, which its panels' alphas say).

    Args:
        spec: the study's figure.
        algorithms: the methods the figure shows.

    Returns:
        The figure's own title, or for a worst-case figure one naming the methods (``no cells`` without one).
    """
    if spec.target != WORST_CASE.name:
        return spec.title
    shown = ", ".join(sorted(set(algorithms))) or "no cells"
    return f"Worst-case target (the alpha -> 0 study): {shown} (log10 worst-case regret, 70% band)"


def regret_figures(bands: pd.DataFrame, panels: pd.DataFrame, styles: dict[tuple[str, str], SeriesStyle],
                   out: Path, best_found: frozenset[tuple[str, float, str]] = frozenset(),
                   figures: tuple[Figure, ...] = (), planned: frozenset[tuple[str, str, str]] | None = None,
                   ) -> list[tuple[str, str, dict[str, Path]]]:
    """Draw every figure of the study (``figures``) and "other".

    A figure with ``always`` is drawn even without results (its panels say "not run"), the others and "other"
    only when they have panels; a panel names the figure's series it lacks: those the folder's grid plans on
    its problem and target (``planned``), or every series of the figure when no grid is recorded (None). With
    a grid record, an ``always`` figure none of whose problems the grid plans at its target is not drawn, and
    an empty panel whose problem it does not plan there says "not in this grid" rather than "not run". Panels
    whose (problem, alpha, target) is in ``best_found`` have their regret against the best value found, and
    say so.

    Args:
        bands: the band table (:func:`analysis.bands.band_table`) with the ``figure`` of each panel.
        panels: the panels (:func:`assign_figures`).
        styles: the series' styles (:func:`analysis.figure_styles.series_styles`).
        out: the folder the figures are written to.
        best_found: the (problem, alpha, target) whose optimum is unknown.
        figures: the study's figures.
        planned: the (problem, algorithm, target) the folder's grid plans, None without a grid record.

    Returns:
        (name, title, paths) of each figure drawn, the study's in their order, then "other"; paths are the
        files by format, ``png`` and ``pdf``.
    """
    drawn = []
    for spec in figures:
        mine = panels.loc[panels["figure"] == spec.name]
        planned_here = None if planned is None else {(p, a) for p, a, t in planned if t == spec.target}
        in_grid = planned_here is None or any(p in {q for q, _ in planned_here} for p in spec.problems)
        if mine.empty and not (spec.always and in_grid):  # a figure the folder's grid never plans
            continue
        keys: list[tuple[str, float, str] | None] = []
        for position in range(len(spec.problems)):
            hit = mine.loc[mine["position"] == position]
            keys.append(None if hit.empty else
                        (hit.iloc[0]["problem"], float(hit.iloc[0]["alpha"]), hit.iloc[0]["target"]))
        ylabels = [None if k is None else regret_label(k[2], k in best_found) for k in keys]
        shown = bands.loc[bands["figure"] == spec.name, "algorithm"].unique().tolist() \
            if "figure" in bands else []
        title = figure_title(spec, shown)
        expected = [tuple(a for a in spec.series if planned_here is None or (problem, a) in planned_here)
                    for problem in spec.problems]
        planned_problems = {p for p, _ in planned_here} if planned_here is not None else set(spec.problems)
        empty = ["not run" if p in planned_problems else "not in this grid" for p in spec.problems]
        fig = _regret_figure(keys, list(spec.problems), spec.shape, bands, styles,
                             spec.target == WORST_CASE.name, ylabels, title, expected=expected, empty=empty)
        drawn.append((spec.name, title, save_figure(fig, out, spec.name)))
    other = panels.loc[panels["figure"] == OTHER].sort_values("position")
    if not other.empty:
        n = len(other)
        cols = min(3, n)
        keys = [(p.problem, float(p.alpha), p.target) for p in other.itertuples()]
        title = "Other settings (log10 regret or worst-case regret, 70% band)"
        fig = _regret_figure(keys, [k[0] for k in keys], (int(np.ceil(n / cols)), cols), bands, styles, True,
                             [regret_label(k[2], k in best_found) for k in keys], title)
        drawn.append((OTHER, title, save_figure(fig, out, OTHER)))
    return drawn


BEST_VALUE = "fig_best_value"
#: How a target's true value is named on an axis.
VALUE_NAMES = {name: measure.label for name, measure in RISK_MEASURES.items()}


def value_figure(bands: pd.DataFrame, styles: dict[tuple[str, str], SeriesStyle], out: Path
                 ) -> tuple[str, str, dict[str, Path]]:
    """The figure of the true value of the recommendation, for the problems whose optimum is unknown.

    One panel per (problem, alpha, target) of ``bands``: the mean true VaR (or another measure) with its 70 %
    band.

    Args:
        bands: the band table of the true value of the recommendation (:func:`analysis.bands.band_table` with
            ``value="achieved"``).
        styles: the series' styles (:func:`analysis.figure_styles.series_styles`).
        out: the folder the figure is written to.

    Returns:
        (:data:`BEST_VALUE`, the figure's title, the paths of its files by format, ``png`` and ``pdf``).
    """
    columns = ["problem", "alpha", "target"]
    found = bands[columns].drop_duplicates().sort_values(columns)
    keys = [(k.problem, float(k.alpha), k.target) for k in found.itertuples()]
    n = len(keys)
    cols = min(3, n)
    title = "Unknown optimum: true value of the recommendation (70% band)"
    fig = _regret_figure(keys, [k[0] for k in keys], (int(np.ceil(n / cols)), cols), bands, styles, True,
                         [f"true {VALUE_NAMES.get(k[2], 'worst case')} of the recommendation" for k in keys],
                         title,
                         show_floor=False)  # a value, not a regret: no floor
    return BEST_VALUE, title, save_figure(fig, out, BEST_VALUE)


def timing_figure(timing: pd.DataFrame, styles: dict[tuple[str, str], SeriesStyle], out: Path
                  ) -> tuple[str, str, dict[str, Path]]:
    """Median and interquartile range of per-iteration acquisition and fit time, and total cell time, per
    problem and series, on a log scale; one legend under the three panels.

    Args:
        timing: the timing table (:func:`analysis.timing.timing_table`).
        styles: the series' styles (:func:`analysis.figure_styles.series_styles`).
        out: the folder the figure is written to.

    Returns:
        (``"fig_timing"``, the figure's title, the paths of its files by format, ``png`` and ``pdf``).
    """
    several_alphas = timing.groupby("problem")["alpha"].transform("nunique") > 1
    alpha_text = timing["alpha"].map(lambda a: f", alpha={a:.3g}")
    timing = timing.assign(label=timing["problem"] + np.where(several_alphas, alpha_text, "")
                           + timing["target"].map({name: f", {m.label}" for name, m in RISK_MEASURES.items()
                                                   if name != DEFAULT_RISK})
                           .fillna("").astype(str))
    labels = list(dict.fromkeys(timing.sort_values(["target", "problem"])["label"]))
    series = sorted(dict.fromkeys(zip(timing["algorithm"], timing["options"], strict=True)),
                    key=lambda s: (s[0], s[1] != "{}", s[1]))
    width = 16.0
    panels_height = 0.32 * max(len(labels), 3) * max(1.0, len(series) / 4) + 1.4
    fig, axes = plt.subplots(1, 3, figsize=(width, panels_height), squeeze=False)
    step = 0.8 / max(len(series), 1)
    handles = []
    for ax, prefix, name in zip(axes.flat, ("acq_s", "fit_s", "total_s"),
                                ("acquisition time per iteration [s]", "GP fit time per iteration [s]",
                                 "total cell time [s]"), strict=True):
        handles = []
        for k, key in enumerate(series):
            style = styles[key]
            rows = timing.loc[(timing["algorithm"] == key[0]) & (timing["options"] == key[1])]
            rows = rows.groupby("label").median(numeric_only=True)  # several alphas/T of one label
            y = np.array([labels.index(lab) for lab in rows.index]) - 0.4 + step * (k + 0.5)
            med = rows[f"{prefix}_median"].to_numpy()
            err = np.vstack([med - rows[f"{prefix}_q25"].to_numpy(), rows[f"{prefix}_q75"].to_numpy() - med])
            handles.append(ax.errorbar(med, y, xerr=np.clip(err, 0, None), fmt=style.marker,
                                       color=style.colour, markersize=4, capsize=2, linestyle="none"))
        log_ticks(ax)
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels(labels if ax is axes.flat[0] else [""] * len(labels), fontsize=8)
        ax.set_ylim(len(labels) - 0.5, -0.5)
        ax.set_xlabel(name)
        ax.grid(True, alpha=0.3, which="both", axis="x")
    key_lines = list(dict.fromkeys(_key_line(styles[s], s[0]) for s in series if styles[s].key))
    title = "Timing: median and interquartile range (log scale)"
    # one entry per label: series a study configures per problem (an option on one problem only) are
    # one method in one style, and a second entry would repeat the first
    first = {styles[s].label: handle for s, handle in zip(series, handles, strict=True)}
    legend_and_key(fig, list(first.values()), list(first), key_lines, width, panels_height, title)
    return "fig_timing", title, save_figure(fig, out, "fig_timing")


def complexity_figure(points: pd.DataFrame, slopes: pd.DataFrame, out: Path, name: str, title: str
                      ) -> tuple[str, str, dict[str, Path]]:
    """The complexity study on log-log axes.

    Per method (columns), time against ``|D|`` with one line per ``|Dz|`` (top row) and against ``|Dz|`` with
    one line per ``|D|`` (bottom row); median over repeats with the interquartile range; each line's fitted
    slope and its interval in the legend.

    Args:
        points: :func:`analysis.complexity.timing_points` output (the methods to draw).
        slopes: :func:`analysis.complexity.slope_table` of those points.
        out: the folder the figure is written to.
        name: the file stem.
        title: the figure title.

    Returns:
        (``name``, ``title``, the paths of its files by format, ``png`` and ``pdf``).
    """
    methods = sorted(points["method"].unique(), key=lambda m: (m == FIT_METHOD, m))
    fig, axes = plt.subplots(2, len(methods), figsize=(4.2 * len(methods), 7.6), squeeze=False)
    for col, method in enumerate(methods):
        for row, (varied, axis_name, other) in enumerate((("D", "|D|", "|Dz|"), ("Dz", "|Dz|", "|D|"))):
            ax = axes[row, col]
            mine = points.loc[(points["method"] == method) & (points["varied"] == varied)]
            fixed_values = sorted(mine["fixed"].unique())
            shades = sns.color_palette("viridis", max(len(fixed_values), 2))
            for k, fixed in enumerate(fixed_values):
                line = mine.loc[mine["fixed"] == fixed].groupby("size")["seconds"]
                med, q25, q75 = line.median(), line.quantile(0.25), line.quantile(0.75)
                fit = slopes.loc[(slopes["method"] == method) & (slopes["varied"] == varied)
                                 & (slopes["fixed"] == fixed)]
                label = f"{other}={fixed:g}"
                if not fit.empty:
                    f = fit.iloc[0]
                    label += f": {f['slope']:.2f} [{f['low']:.2f}, {f['high']:.2f}]"
                ax.errorbar(med.index, med.to_numpy(),
                            yerr=np.vstack([med - q25, q75 - med]).clip(0), fmt="o-", markersize=3,
                            capsize=2, color=shades[k], label=label)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(axis_name)
            if col == 0:
                ax.set_ylabel("CPU seconds")
            ax.set_title(f"{method}: against {axis_name}", fontsize=9)
            ax.grid(True, alpha=0.3, which="both")
            if fixed_values:
                ax.legend(fontsize=6, title="slope [95% CI]", title_fontsize=6)
    fit_suptitle(fig, title, fig.get_size_inches()[0])
    fig.tight_layout()
    return name, title, save_figure(fig, out, name)
