"""Figures laid out like the paper's: regret curves with 70 % bands, and the timing comparison.

Figure 3 (discrete Z, 2 x 2), Figure 4 (continuous Z, 2 x 2), Figure 5 (portfolio, robot pushing),
the alpha -> 0 study (worst-case regret, 2 x 2), and "other" for any problem or setting the paper
does not draw. A panel is one (problem, alpha, target); a paper figure shows each problem at the
alpha with the most cells, any other alpha goes to "other". One colour per algorithm in every figure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.ticker import MaxNLocator

from analysis.claims import CONTINUOUS, DISCRETE

#: Fixed colours of the paper's algorithms; others get the next colours of the palette by name.
_PALETTE = sns.color_palette("colorblind", 10).as_hex()
_FIXED = {"vucb-unif": _PALETTE[0], "vucb-prob": _PALETTE[1], "rhokg-apx": _PALETTE[2],
          "stableopt": _PALETTE[3], "random": _PALETTE[7]}


@dataclass(frozen=True)
class FigureSpec:
    name: str  # file stem
    title: str
    problems: tuple[str, ...]  # panel order
    shape: tuple[int, int]
    target: str


FIGURES = (
    FigureSpec("fig3_discrete", "Figure 3: discrete Z (log10 regret, 70% band)", DISCRETE, (2, 2), "var"),
    FigureSpec("fig4_continuous", "Figure 4: continuous Z (log10 regret, 70% band)", CONTINUOUS, (2, 2),
               "var"),
    FigureSpec("fig5_simulated", "Figure 5: portfolio and robot pushing (log10 regret, 70% band)",
               ("portfolio-3-2", "robot-push-3-2"), (1, 2), "var"),
    FigureSpec("fig_alpha0", "alpha -> 0: StableOpt and V-UCB (log10 worst-case regret, 70% band)", DISCRETE,
               (2, 2), "worst_case"),
)
OTHER = "fig_other"


def colours(algorithms: list[str]) -> dict[str, str]:
    """Algorithm -> colour, the same in every figure of a report."""
    spare = [c for c in _PALETTE if c not in _FIXED.values()]
    out = {a: _FIXED[a] for a in algorithms if a in _FIXED}
    for i, a in enumerate(sorted(a for a in set(algorithms) if a not in _FIXED)):
        out[a] = spare[i % len(spare)]
    return out


def assign_figures(bands: pd.DataFrame) -> pd.DataFrame:
    """A table of panels: ``figure``, ``problem``, ``alpha``, ``target``, ``position`` (index in the
    paper's layout, or in the "other" figure)."""
    panels = (bands.loc[bands["iteration"] == 0].groupby(["problem", "alpha", "target"])["n_seeds"].sum()
              .rename("cells").reset_index())
    figure = pd.Series(OTHER, index=panels.index)
    position = pd.Series(-1, index=panels.index)
    for spec in FIGURES:
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


def _series_label(algorithm: str, options: str, iterations: int, several_t: bool) -> str:
    label = algorithm
    if options != "{}":
        label += " " + ",".join(f"{k}={v}" for k, v in json.loads(options).items())
    if several_t:
        label += f" T={iterations}"
    return label


def regret_label(target: str, best_found: bool = False) -> str:
    """The y label of a regret panel: against the optimum, or against the best value found in the
    folder when the problem's optimum is unknown (:func:`analysis.data.regret_against_best_found`)."""
    label = "log10 regret" if target == "var" else "log10 worst-case regret"
    return label + " vs best found in folder" if best_found else label


def _draw_panel(ax, bands: pd.DataFrame, problem: str, alpha: float, target: str, palette: dict[str, str],
                show_alpha: bool, ylabel: str | None = None) -> None:
    panel = bands.loc[(bands["problem"] == problem) & (bands["alpha"] == alpha) & (bands["target"] == target)]
    several_t = panel["iterations"].nunique() > 1
    linestyles = ["-", "--", ":", "-."]
    for i, ((algorithm, options, iterations), series) in enumerate(
            panel.groupby(["algorithm", "options", "iterations"], sort=True)):
        colour = palette[algorithm]
        style = linestyles[0] if options == "{}" else linestyles[1 + i % 3]
        last = series.iloc[-1]
        label = _series_label(algorithm, options, iterations, several_t) + f" (n={int(last['n_seeds'])}"
        if last["n_floor"]:
            label += f", {int(last['n_floor'])} at floor"
        label += ")"
        it = series["iteration"].to_numpy()
        # StableOpt wider and underneath: at alpha -> 0 V-UCB's curve may coincide with it exactly (C7)
        wide = algorithm == "stableopt"
        ax.plot(it, series["mean"].to_numpy(), color=colour, linestyle=style, label=label,
                linewidth=4.0 if wide else 1.5, alpha=0.6 if wide else 1.0, zorder=1.5 if wide else 2.5)
        ax.fill_between(it, series["lower"].to_numpy(), series["upper"].to_numpy(), color=colour, alpha=0.2,
                        linewidth=0)
    title = problem + (f", alpha={alpha:.4g}" if show_alpha else "")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("iteration")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(ylabel or regret_label(target))
    # below the axes: inside, a legend hides the curves of short or noisy runs
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    ax.grid(True, alpha=0.3)


def _empty_panel(ax, problem: str) -> None:
    ax.set_title(problem, fontsize=10)
    ax.text(0.5, 0.5, "not run", ha="center", va="center", transform=ax.transAxes, color="grey")
    ax.set_xticks([])
    ax.set_yticks([])


def _save(fig, out: Path, name: str) -> dict[str, Path]:
    fig.tight_layout()
    paths = {"png": out / f"{name}.png", "pdf": out / f"{name}.pdf"}
    fig.savefig(paths["png"], dpi=110)
    fig.savefig(paths["pdf"])
    plt.close(fig)
    return paths


def regret_figures(bands: pd.DataFrame, panels: pd.DataFrame, palette: dict[str, str], out: Path,
                   best_found: frozenset[tuple[str, float, str]] = frozenset()
                   ) -> list[tuple[str, str, dict[str, Path]]]:
    """Draw every figure; returns (name, title, paths) of each. Paper figures are always drawn (panels
    without results say "not run"); "other" only when it has panels. Panels whose (problem, alpha,
    target) is in ``best_found`` have their regret against the best value found, and say so."""
    drawn = []
    for spec in FIGURES:
        rows, cols = spec.shape
        fig, axes = plt.subplots(rows, cols, figsize=(5.6 * cols, 4.6 * rows), squeeze=False)
        mine = panels.loc[panels["figure"] == spec.name]
        for position, problem in enumerate(spec.problems):
            ax = axes.flat[position]
            hit = mine.loc[mine["position"] == position]
            if hit.empty:
                _empty_panel(ax, problem)
            else:
                p = hit.iloc[0]
                key = (p["problem"], p["alpha"], p["target"])
                _draw_panel(ax, bands, *key, palette, show_alpha=spec.target == "worst_case",
                            ylabel=regret_label(p["target"], key in best_found))
        fig.suptitle(spec.title, fontsize=11)
        drawn.append((spec.name, spec.title, _save(fig, out, spec.name)))
    other = panels.loc[panels["figure"] == OTHER].sort_values("position")
    if not other.empty:
        n = len(other)
        cols = min(3, n)
        rows = int(np.ceil(n / cols))
        fig, axes = plt.subplots(rows, cols, figsize=(5.6 * cols, 4.6 * rows), squeeze=False)
        for ax, p in zip(axes.flat, other.itertuples(), strict=False):
            _draw_panel(ax, bands, p.problem, p.alpha, p.target, palette, show_alpha=True,
                        ylabel=regret_label(p.target, (p.problem, p.alpha, p.target) in best_found))
        for ax in list(axes.flat)[n:]:
            ax.set_visible(False)
        title = "Other settings (log10 regret or worst-case regret, 70% band)"
        fig.suptitle(title, fontsize=11)
        drawn.append((OTHER, title, _save(fig, out, OTHER)))
    return drawn


BEST_VALUE = "fig_best_value"


def value_figure(bands: pd.DataFrame, palette: dict[str, str], out: Path) -> tuple[str, str, dict[str, Path]]:
    """One panel per (problem, alpha, target) of ``bands`` (of the true value of the recommendation,
    :func:`analysis.bands.band_table` with ``value="achieved"``): the mean true VaR (or worst case)
    with its 70 % band, for the problems whose optimum is unknown."""
    keys = bands[["problem", "alpha", "target"]].drop_duplicates().sort_values(["problem", "alpha", "target"])
    n = len(keys)
    cols = min(3, n)
    rows = int(np.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(max(7.0, 5.6 * cols), 4.6 * rows), squeeze=False)
    for ax, k in zip(axes.flat, keys.itertuples(), strict=False):
        _draw_panel(ax, bands, k.problem, k.alpha, k.target, palette, show_alpha=True,
                    ylabel="true VaR of the recommendation" if k.target == "var"
                    else "true worst case of the recommendation")
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    title = "Unknown optimum: true value of the recommendation (70% band)"
    fig.suptitle(title, fontsize=11)
    return BEST_VALUE, title, _save(fig, out, BEST_VALUE)


def timing_figure(timing: pd.DataFrame, palette: dict[str, str], out: Path
                  ) -> tuple[str, str, dict[str, Path]]:
    """Median and interquartile range of per-iteration acquisition and fit time, and total cell time,
    per problem and algorithm, on a log scale."""
    several_alphas = timing.groupby("problem")["alpha"].transform("nunique") > 1
    alpha_text = timing["alpha"].map(lambda a: f", alpha={a:.3g}")
    timing = timing.assign(label=timing["problem"] + np.where(several_alphas, alpha_text, "")
                           + np.where(timing["target"] == "worst_case", ", worst-case target", ""))
    labels = list(dict.fromkeys(timing.sort_values(["target", "problem"])["label"]))
    series = list(dict.fromkeys(zip(timing["algorithm"], timing["options"], strict=True)))
    fig, axes = plt.subplots(1, 3, figsize=(16, 0.45 * max(len(labels), 4) + 1.8), squeeze=False)
    width = 0.8 / max(len(series), 1)
    for ax, prefix, name in zip(axes.flat, ("acq_s", "fit_s", "total_s"),
                                ("acquisition time per iteration [s]", "GP fit time per iteration [s]",
                                 "total cell time [s]"), strict=True):
        for k, (algorithm, options) in enumerate(series):
            rows = timing.loc[(timing["algorithm"] == algorithm) & (timing["options"] == options)]
            rows = rows.groupby("label").median(numeric_only=True)  # several alphas/T of one label
            y = np.array([labels.index(lab) for lab in rows.index]) - 0.4 + width * (k + 0.5)
            med = rows[f"{prefix}_median"].to_numpy()
            err = np.vstack([med - rows[f"{prefix}_q25"].to_numpy(), rows[f"{prefix}_q75"].to_numpy() - med])
            label = algorithm if options == "{}" else f"{algorithm} {options}"
            ax.errorbar(med, y, xerr=np.clip(err, 0, None), fmt="o", color=palette[algorithm], label=label,
                        markersize=4, capsize=2)
        ax.set_xscale("log")
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels(labels if ax is axes.flat[0] else [""] * len(labels), fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(name)
        ax.grid(True, alpha=0.3, which="both", axis="x")
    axes.flat[0].legend(fontsize=7, loc="lower right")
    title = "Timing: median and interquartile range (log scale)"
    fig.suptitle(title, fontsize=11)
    return "fig_timing", title, _save(fig, out, "fig_timing")


def complexity_figure(points: pd.DataFrame, slopes: pd.DataFrame, out: Path, name: str, title: str
                      ) -> tuple[str, str, dict[str, Path]]:
    """The complexity study on log-log axes: per method (columns), time against |D| with one line
    per |Dz| (top row) and against |Dz| with one line per |D| (bottom row); median over repeats with
    the interquartile range; each line's fitted slope and its interval in the legend.

    Args:
        points: :func:`analysis.complexity.timing_points` output (the methods to draw).
        slopes: :func:`analysis.complexity.slope_table` of those points.
        name, title: file stem and figure title.
    """
    methods = sorted(points["method"].unique(), key=lambda m: (m == "gp-fit", m))
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
    fig.suptitle(title, fontsize=11)
    return name, title, _save(fig, out, name)
