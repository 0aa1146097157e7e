"""The figures of :mod:`analysis.across`: performance profiles with their bands, the
critical-difference diagram and cost against quality. One colour per method, as in every figure of
a report (:func:`analysis.figure_styles.colours`); one legend under the panels."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from analysis.across import cliques
from analysis.figure_layout import legend_and_key, log_ticks, save_figure
from problems.measures import RISK_MEASURES


def _target_label(target: str) -> str:
    measure = RISK_MEASURES.get(target)
    return measure.label if measure is not None else target


#: The widest these figures are drawn (inches at the report's 110 dpi): about the width the built
#: site gives a figure at a 1280 px window (929 px, measured in Chromium), so that it is shown at its
#: own size, and :data:`PAGE_FONT` points read at the body text's 16 px there.
PAGE_WIDTH_IN = 8.4
#: The size of these figures' tick labels, axis labels and panel titles (points): 11 pt at 110 dpi is
#: 16.8 px, the body text's size or above.
PAGE_FONT = 11


def _page_fonts(ax) -> None:
    """A panel's tick labels, axis labels and title at :data:`PAGE_FONT`."""
    ax.tick_params(labelsize=PAGE_FONT)
    ax.xaxis.label.set_size(PAGE_FONT)
    ax.yaxis.label.set_size(PAGE_FONT)
    ax.title.set_size(PAGE_FONT)


def _finish(fig, handles: list, labels: list[str], width: float, height: float, title: str) -> None:
    """The legend under the panels and the title above them (:func:`analysis.figure_layout.legend_and_key`,
    which gives a wrapped title the room it needs)."""
    legend_and_key(fig, handles, labels, [], width, height, title, fontsize=PAGE_FONT)


def profile_figure(profiles: pd.DataFrame, colour: dict[str, str], baseline: str, out: Path
                   ) -> tuple[str, str, dict[str, Path]]:
    """The figure of the performance profiles, drawn and saved.

    One panel per target: each method's profile (fraction of runs at or below tau) with its 95 % band, tau in
    decades of final regret against the baseline's median.

    Args:
        profiles: the profiles of :func:`analysis.across.profile_table`.
        colour: method -> its colour.
        baseline: the method the scores are measured against, drawn dashed.
        out: the folder the figure is written to.

    Returns:
        (``"fig_profiles"``, the figure's title, the paths of its files by format, ``png`` and ``pdf``).
    """
    targets = sorted(profiles["target"].unique())
    width, height = PAGE_WIDTH_IN, 3.8 * len(targets)  # one panel a row: legible at the page's width
    fig, axes = plt.subplots(len(targets), 1, figsize=(width, height), squeeze=False)
    handles: dict[str, object] = {}
    for ax, target in zip(axes.flat, targets, strict=True):
        part = profiles.loc[profiles["target"] == target]
        for method, curve in part.groupby("algorithm", sort=True):
            (line,) = ax.plot(curve["tau"], curve["fraction"], color=colour[method], lw=1.6,
                              ls="--" if method == baseline else "-", drawstyle="steps-post")
            ax.fill_between(curve["tau"], curve["low"], curve["high"], color=colour[method], alpha=0.15,
                            step="post", lw=0)
            handles.setdefault(method, line)
        ax.axvline(0.0, color="0.5", lw=0.8, ls=":")
        n_problems = int(part["n_problems"].max())
        ax.set_title(f"{_target_label(target)}: {n_problems} problem(s)")
        ax.set_xlabel(f"final log10 regret - {baseline}'s median (decades)")
        ax.set_ylabel("fraction of runs at or below")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(True, alpha=0.3)
        _page_fonts(ax)
    title = (f"Performance profiles: runs of each method by final regret against {baseline} "
             "(left and high is better; 95% stratified bootstrap band)")
    _finish(fig, list(handles.values()), list(handles), width, height, title)
    return "fig_profiles", title, save_figure(fig, out, "fig_profiles")


def _cd_panel(ax, ranks: pd.Series, pairs: pd.DataFrame, colour: dict[str, str], title: str) -> None:
    """Demsar's layout: the average-rank axis on top, the better half of the methods labelled on
    the left, the others on the right, bars under the axis joining methods no test tells apart."""
    order = list(ranks.sort_values().index)
    k = len(order)
    different = {frozenset((a, b)) for a, b, d in pairs[["a", "b", "different"]].itertuples(index=False) if d}
    bars = cliques(order, different)
    ax.set_xlim(0.5, k + 0.5)
    half = (k + 1) // 2
    rows = max(half, k - half)
    ax.set_ylim(rows + 0.5 + 0.35 * len(bars), -0.9)
    ax.hlines(0, 1, k, color="black", lw=1)
    for r in range(1, k + 1):
        ax.vlines(r, -0.15, 0, color="black", lw=1)
        ax.text(r, -0.3, str(r), ha="center", va="bottom", fontsize=8)
    for i, method in enumerate(order):
        rank = float(ranks[method])
        left = i < half
        level = 0.9 + 0.35 * len(bars) + (i if left else k - 1 - i)
        edge = 0.55 if left else k + 0.45
        ax.plot([rank, rank, edge], [0, level, level], color=colour[method], lw=1.6)
        # labels in black: the palette's light colours (pink, yellow) are unreadable as text
        ax.text(edge + (-0.05 if left else 0.05), level, f"{method} ({rank:.2f})",
                ha="right" if left else "left", va="center", fontsize=8, color="black")
    for b, (i, j) in enumerate(bars):
        y = 0.45 + 0.35 * b
        ax.hlines(y, float(ranks[order[i]]) - 0.05, float(ranks[order[j]]) + 0.05, color="black", lw=3)
    ax.set_title(title, fontsize=10)
    ax.axis("off")


def cd_figure(ranks: pd.DataFrame, friedman: pd.DataFrame, pairs: pd.DataFrame, colour: dict[str, str],
              out: Path) -> tuple[str, str, dict[str, Path]]:
    """One critical-difference diagram per target, drawn and saved (average rank over every block; 1 is best).

    Args:
        ranks: the ``ranks`` frame of :func:`analysis.across.rank_tables`.
        friedman: its ``friedman`` frame: one panel per row.
        pairs: its ``pairs`` frame, whose ``different`` pairs split the bars.
        colour: method -> its colour.
        out: the folder the figure is written to.

    Returns:
        (``"fig_ranks"``, the figure's title, the paths of its files by format, ``png`` and ``pdf``).
    """
    targets = list(friedman["target"])
    width = 9.0
    heights = [0.45 * max(len(ranks.loc[(ranks["target"] == t) & (ranks["problem"] == "all")]), 3) + 1.6
               for t in targets]
    fig, axes = plt.subplots(len(targets), 1, figsize=(width, sum(heights)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, row in zip(axes.flat, friedman.itertuples(index=False), strict=True):
        mean = ranks.loc[(ranks["target"] == row.target) & (ranks["problem"] == "all")].set_index("algorithm")
        p_text = f"Friedman p = {row.p:.2g}" if np.isfinite(row.p) else "two methods: no Friedman test"
        _cd_panel(ax, mean["mean_rank"], pairs.loc[pairs["target"] == row.target], colour,
                  f"{_target_label(row.target)}: {row.n_blocks} blocks (problem, seed) on {row.n_problems} "
                  f"problem(s); {p_text}")
    title = ("Average ranks (1 is best); a bar joins methods that no pairwise Wilcoxon test tells apart "
             "(Holm-corrected, 5%)")
    _finish(fig, [], [], width, sum(heights), title)
    return "fig_ranks", title, save_figure(fig, out, "fig_ranks")


def cost_quality_figure(table: pd.DataFrame, colour: dict[str, str], out: Path
                        ) -> tuple[str, str, dict[str, Path]]:
    """The figure of cost against quality, drawn and saved.

    One panel per (problem, target): each method's median seconds per iteration (log scale) against its median
    final log10 regret, with the interquartile ranges of both over seeds.

    Args:
        table: the table of :func:`analysis.across.cost_quality_table`.
        colour: method -> its colour.
        out: the folder the figure is written to.

    Returns:
        (``"fig_cost_quality"``, the figure's title, the paths of its files by format, ``png`` and ``pdf``).
    """
    panels = list(table.groupby(["problem", "target"], sort=True).groups)
    ncols = min(2, len(panels))  # two a row: legible at the page's width
    nrows = -(-len(panels) // ncols)
    width, height = PAGE_WIDTH_IN, 3.4 * nrows
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), squeeze=False)
    handles: dict[str, object] = {}
    for ax, (problem, target) in zip(axes.flat, panels, strict=False):
        part = table.loc[(table["problem"] == problem) & (table["target"] == target)]
        for row in part.itertuples(index=False):
            xerr = [[row.seconds_median - row.seconds_q25], [row.seconds_q75 - row.seconds_median]]
            yerr = [[row.final_median - row.final_q25], [row.final_q75 - row.final_median]]
            handle = ax.errorbar([row.seconds_median], [row.final_median], xerr=np.clip(xerr, 0, None),
                                 yerr=np.clip(yerr, 0, None), fmt="o", color=colour[row.algorithm],
                                 markersize=5, capsize=2)
            handles.setdefault(row.algorithm, handle)
        log_ticks(ax)
        ax.set_title(f"{problem}, {_target_label(target)}")
        ax.set_xlabel("seconds per iteration")
        ax.set_ylabel("final log10 regret")
        ax.grid(True, alpha=0.3, which="both")
        _page_fonts(ax)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    methods = sorted(handles)
    title = "Cost against quality: medians and interquartile ranges over seeds (left and low is better)"
    _finish(fig, [handles[m] for m in methods], methods, width, height, title)
    return "fig_cost_quality", title, save_figure(fig, out, "fig_cost_quality")
