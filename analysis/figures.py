"""Figures laid out like the paper's: regret curves with 70 % bands, and the timing comparison.

Figure 3 (discrete Z, 2 x 2), Figure 4 (continuous Z, 2 x 2), Figure 5 (portfolio, robot pushing),
the alpha -> 0 study (worst-case regret, 2 x 2), the same three layouts for the CVaR cells (CVaR
regret; drawn when there are any), and "other" for any problem or setting the paper does not draw.
A panel is one (problem, alpha, target); a paper figure shows each problem at the alpha with the
most cells, any other alpha goes to "other". One colour per algorithm in every figure.
"""

from __future__ import annotations

import json
import textwrap
import warnings
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from analysis.complexity import FIT_METHOD
from analysis.data import options_text
from harness.study import Figure
from problems.measures import DEFAULT_RISK, RISK_MEASURES, WORST_CASE, risk_measure

#: The palette; a study fixes some algorithms' colours (its ``colours``), the rest get the next
#: colours of it by name.
_PALETTE = sns.color_palette("colorblind", 10).as_hex()
OTHER = "fig_other"


def colours(algorithms: list[str], fixed: dict[str, int] | None = None) -> dict[str, str]:
    """Algorithm -> colour, the same in every figure of a report: ``fixed`` (a study's ``colours``)
    gives some a colour of the palette by index, the others take the remaining ones by name."""
    fixed_colours = {a: _PALETTE[i % len(_PALETTE)] for a, i in (fixed or {}).items()}
    spare = [c for c in _PALETTE if c not in fixed_colours.values()]
    out = {a: fixed_colours[a] for a in algorithms if a in fixed_colours}
    for i, a in enumerate(sorted(a for a in set(algorithms) if a not in fixed_colours)):
        out[a] = spare[i % len(spare)]
    return out


def assign_figures(bands: pd.DataFrame, figures: tuple[Figure, ...] = ()) -> pd.DataFrame:
    """A table of panels: ``figure``, ``problem``, ``alpha``, ``target``, ``position`` (index in the
    layout of the study's figure that shows it, or in the "other" figure)."""
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
# series: one short label, colour, line style and marker per (algorithm, options), report-wide

#: Option strings up to this many characters go into a legend label as they are; longer ones get a
#: key (``[A]``) that the key table under the legend spells out.
LABEL_OPTIONS_CHARS = 20
_LINESTYLES = ("-", "--", ":", "-.")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p")


@dataclass(frozen=True)
class SeriesStyle:
    """How one series (an algorithm with its options) is drawn in every figure of a report."""

    label: str  # short: the algorithm, then its options or their key
    colour: str  # one per algorithm
    linestyle: str  # "-" for the default options, another style per variant of the algorithm
    marker: str  # one per series: coinciding lines still show every series' markers
    key: str | None  # "[A]" when the options are in the key table, else None
    options_text: str  # "name=value, ..." ("" for the default options)


def series_styles(series: list[tuple[str, str]], fixed: dict[str, int] | None = None,
                  shown: dict[tuple[str, str], str] | None = None) -> dict[tuple[str, str], SeriesStyle]:
    """The style of every (algorithm, options JSON) of a report, in a stable order: the same inputs
    give the same labels, keys and markers, whatever order they come in (``fixed``: :func:`colours`).
    ``shown``: the options JSON a series is labelled by, when the study reads its options otherwise
    (:func:`shown_options`: a study's reduced effort is its default); series shown alike share a style."""
    shown = shown or {}
    display = {s: shown.get(s, s[1]) for s in dict.fromkeys(series)}
    ordered = sorted(dict.fromkeys((a, o) for (a, _), o in display.items()),
                     key=lambda s: (s[0], s[1] != "{}", s[1]))
    palette = colours([a for a, _ in ordered], fixed)
    by_display: dict[tuple[str, str], SeriesStyle] = {}
    variants: dict[str, int] = {}
    keys = 0
    for i, (algorithm, options) in enumerate(ordered):
        text = options_text(options)
        key = None
        if not text:
            label, linestyle = algorithm, _LINESTYLES[0]
        else:
            n = variants[algorithm] = variants.get(algorithm, 0) + 1
            linestyle = _LINESTYLES[1 + (n - 1) % (len(_LINESTYLES) - 1)]
            if len(text) <= LABEL_OPTIONS_CHARS:
                label = f"{algorithm} {text}"
            else:
                key = f"[{_key_name(keys)}]"
                keys += 1
                label = f"{algorithm} {key}"
        by_display[algorithm, options] = SeriesStyle(label, palette[algorithm], linestyle,
                                                     _MARKERS[i % len(_MARKERS)], key, text)
    return {s: by_display[s[0], o] for s, o in display.items()}


def shown_options(cells: pd.DataFrame) -> dict[tuple[str, str], str]:
    """(algorithm, options JSON) -> the settings a study reads them as (``cells``:
    :func:`analysis.claims.study_cells`), where they differ; an alias's own name is left out (its
    series are named by it already). A pair read two ways on two problems keeps its options."""
    shown: dict[tuple[str, str], set[str]] = {}
    for algorithm, options, settings in zip(cells["algorithm"], cells["options"], cells["settings"],
                                            strict=True):
        read = {k: v for k, v in json.loads(settings).items() if k != "algorithm"}
        shown.setdefault((algorithm, options), set()).add(json.dumps(read, sort_keys=True))
    return {pair: next(iter(reads)) for pair, reads in shown.items()
            if len(reads) == 1 and next(iter(reads)) != pair[1]}


def _key_name(i: int) -> str:
    """A, B, ..., Z, AA, AB, ..."""
    name = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        name = chr(ord("A") + r) + name
    return name


# ---------------------------------------------------------------------------------------------------
# layout: panels on top, then one legend for the figure, then the key table; nothing outside


#: Inches: figure margins around the legend and key block.
_PAD_IN = 0.12
LEGEND_FONTSIZE = 8
KEY_FONTSIZE = 7.5


def legend_and_key(fig, handles: list, labels: list[str], key_lines: list[str], width_in: float,
                    panels_height_in: float, suptitle: str) -> None:
    """Put one legend for the whole figure and the key table under the panels, as many legend
    columns as fit the width, grow the figure by the height they take, and lay the panels out in
    the space above them. Every size is measured on the renderer, not guessed."""
    renderer = fig.canvas.get_renderer()
    dpi = fig.dpi
    legend = None
    for ncol in range(min(len(labels), 6), 0, -1):
        if legend is not None:
            legend.remove()
        legend = fig.legend(handles, labels, loc="upper center", ncol=ncol, frameon=False,
                            fontsize=LEGEND_FONTSIZE, handlelength=3.0, columnspacing=1.5)
        if legend.get_window_extent(renderer).width / dpi <= width_in - 2 * _PAD_IN:
            break
    legend_h = legend.get_window_extent(renderer).height / dpi if labels else 0.0
    key = None
    key_h = 0.0
    if key_lines:
        chars = 200
        while True:  # wrap the key table until it fits the width
            text = "\n".join(line for k in key_lines
                             for line in textwrap.wrap(k, chars, subsequent_indent="      "))
            if key is not None:
                key.remove()
            key = fig.text(0.5, 0.0, text, ha="center", va="top", fontsize=KEY_FONTSIZE,
                           family="monospace", multialignment="left")
            extent = key.get_window_extent(renderer)
            if extent.width / dpi <= width_in - 2 * _PAD_IN or chars <= 30:
                break
            chars = int(chars * (width_in - 2 * _PAD_IN) / (extent.width / dpi)) - 1
        key_h = key.get_window_extent(renderer).height / dpi + _PAD_IN
    bottom_in = legend_h + key_h + 2 * _PAD_IN
    height = panels_height_in + bottom_in
    fig.set_size_inches(width_in, height)
    if legend is not None:
        legend.set_bbox_to_anchor((0.5, (bottom_in - _PAD_IN / 2) / height), transform=fig.transFigure)
    if key is not None:
        key.set_position((0.5, (key_h + _PAD_IN / 2) / height))
    if suptitle:
        fit_suptitle(fig, suptitle, width_in)
    fig.tight_layout(rect=(0.0, bottom_in / height, 1.0, 1.0))
    if suptitle and _title_overlaps(fig):  # tight_layout left the title too little room (tall grids)
        title_in = fig._suptitle.get_window_extent(fig.canvas.get_renderer()).height / fig.dpi
        fig.tight_layout(rect=(0.0, bottom_in / height, 1.0, 1.0 - (title_in + _PAD_IN) / height))


def _title_overlaps(fig) -> bool:
    """Whether the figure's title runs into a visible panel or its title."""
    renderer = fig.canvas.get_renderer()
    title = fig._suptitle.get_window_extent(renderer)
    boxes = [ax.get_window_extent(renderer) for ax in fig.axes if ax.get_visible()]
    boxes += [ax.title.get_window_extent(renderer) for ax in fig.axes if ax.get_visible() and ax.get_title()]
    return any(title.overlaps(box) for box in boxes)


def fit_suptitle(fig, text: str, width_in: float) -> None:
    """The figure's title, wrapped until it fits ``width_in`` inches (measured on the renderer)."""
    renderer = fig.canvas.get_renderer()
    chars = len(text)
    while True:
        title = fig.suptitle(textwrap.fill(text, chars), fontsize=11)
        title_in = title.get_window_extent(renderer).width / fig.dpi
        if title_in <= width_in - 2 * _PAD_IN or chars <= 20:
            return
        chars = int(chars * (width_in - 2 * _PAD_IN) / title_in) - 1


def _drawn_tick_labels(axis) -> list:
    """The tick labels ``axis`` draws: those of ticks inside its view interval (matplotlib keeps
    labels of ticks outside it, undrawn)."""
    low, high = sorted(axis.get_view_interval())
    span = (high - low) * 1e-9
    return [label for tick in axis.get_major_ticks() + axis.get_minor_ticks()
            if low - span <= tick.get_loc() <= high + span
            for label in (tick.label1, tick.label2) if label.get_visible() and label.get_text().strip()]


def _texts(fig) -> list:
    """Every text ``fig`` draws (titles, axis labels, drawn tick labels, legend entries, the key)."""
    from matplotlib.text import Text

    panels = [ax for ax in fig.axes if ax.get_visible()]
    ticks = {id(t) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
             for tick in axis.get_major_ticks() + axis.get_minor_ticks() for t in (tick.label1, tick.label2)}
    texts = [t for t in fig.findobj(Text) if id(t) not in ticks and t.get_visible() and t.get_text().strip()
             and (t.axes is None or t.axes.get_visible())]
    return texts + [t for ax in panels for axis in (ax.xaxis, ax.yaxis) for t in _drawn_tick_labels(axis)]


def layout_problems(fig) -> list[str]:
    """What a reader would see wrong in ``fig`` as drawn: a text (title, label, tick label, legend
    entry, key line) outside the canvas, a figure legend over a panel, panel titles that run into
    each other, overlapping tick labels of an axis. Empty when none."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    canvas = fig.bbox
    problems = []
    for text in _texts(fig):
        box = text.get_window_extent(renderer)
        if (box.x0 < canvas.x0 - 1 or box.y0 < canvas.y0 - 1 or box.x1 > canvas.x1 + 1
                or box.y1 > canvas.y1 + 1):
            problems.append(f"text {text.get_text()[:40]!r} lies outside the canvas")
    panels = [ax for ax in fig.axes if ax.get_visible()]
    for legend in fig.legends:
        box = legend.get_window_extent(renderer)
        for ax in panels:
            if box.overlaps(ax.get_window_extent(renderer)):
                problems.append(f"the figure legend covers the panel {ax.get_title()[:40]!r}")
    if fig._suptitle is not None and fig._suptitle.get_text() and _title_overlaps(fig):
        problems.append(f"the figure title {fig._suptitle.get_text()[:30]!r} runs into a panel")
    titles = [(ax.title, ax.title.get_window_extent(renderer)) for ax in panels if ax.get_title()]
    for i, (first, a) in enumerate(titles):
        for second, b in titles[i + 1:]:
            if a.overlaps(b):
                problems.append(f"the panel titles {first.get_text()[:30]!r} and {second.get_text()[:30]!r} "
                                "overlap")
    for ax in panels:
        for axis in (ax.xaxis, ax.yaxis):
            labels = _drawn_tick_labels(axis)
            boxes = [t.get_window_extent(renderer) for t in labels]
            for i in range(len(boxes) - 1):
                for j in range(i + 1, len(boxes)):
                    if boxes[i].overlaps(boxes[j]):
                        problems.append(f"tick labels {labels[i].get_text()!r} and {labels[j].get_text()!r} "
                                        f"of {ax.get_title()[:40]!r} overlap")
    return problems


def save_figure(fig, out: Path, name: str) -> dict[str, Path]:
    problems = layout_problems(fig)
    if problems:  # drawn anyway (a figure is better than none); the tests keep this empty
        warnings.warn(f"{name}: " + "; ".join(problems[:3]), stacklevel=2)
    paths = {"png": out / f"{name}.png", "pdf": out / f"{name}.pdf"}
    fig.savefig(paths["png"], dpi=110)
    fig.savefig(paths["pdf"])
    plt.close(fig)
    return paths


# ---------------------------------------------------------------------------------------------------
# regret figures


def regret_label(target: str, best_found: bool = False) -> str:
    """The y label of a regret panel: against the optimum, or against the best value found in the
    folder when the problem's optimum is unknown (:func:`analysis.data.regret_against_best_found`)."""
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
        # markers a few per line, each series at its own offset: lines that coincide (StableOpt and
        # V-UCB at alpha -> 0, C7) still show every series
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
    """A line of the key table: ``[A] rhokg-apx: maxiter=100, raw_per_restart=10``."""
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
    """The title of a study's figure as drawn: a worst-case figure names the methods it shows (it is
    the alpha -> 0 study only where they ran below the smallest mass, which its panels' alphas say)."""
    if spec.target != WORST_CASE.name:
        return spec.title
    shown = ", ".join(sorted(set(algorithms))) or "no cells"
    return f"Worst-case target (the alpha -> 0 study): {shown} (log10 worst-case regret, 70% band)"


def regret_figures(bands: pd.DataFrame, panels: pd.DataFrame, styles: dict[tuple[str, str], SeriesStyle],
                   out: Path, best_found: frozenset[tuple[str, float, str]] = frozenset(),
                   figures: tuple[Figure, ...] = (), planned: frozenset[tuple[str, str, str]] | None = None,
                   ) -> list[tuple[str, str, dict[str, Path]]]:
    """Draw every figure of the study (``figures``) and "other"; returns (name, title, paths) of each.
    A figure with ``always`` is drawn even without results (its panels say "not run"), the others
    and "other" only when they have panels; a panel names the figure's series it lacks: those the
    folder's grid plans on its problem and target (``planned``, (problem, algorithm, target)), or
    every series of the figure when no grid is recorded (None). With a grid record, an ``always``
    figure none of whose problems the grid plans at its target is not drawn, and an empty panel
    whose problem it does not plan there says "not in this grid" rather than "not run". Panels
    whose (problem, alpha, target) is in ``best_found`` have their regret against the best value
    found, and say so."""
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
    """One panel per (problem, alpha, target) of ``bands`` (of the true value of the recommendation,
    :func:`analysis.bands.band_table` with ``value="achieved"``): the mean true VaR (or worst case)
    with its 70 % band, for the problems whose optimum is unknown."""
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


def log_ticks(ax) -> None:
    """A log x axis with labels that never collide: decades only, or 1-2-5 within them when the data
    span less than two decades (matplotlib would label the minor ticks then, and they overlap), on
    at least a decade (a narrower span leaves matplotlib to pick linear ticks with long labels)."""
    ax.set_xscale("log")
    low, high = ax.get_xlim()
    if high / low < 10:  # widened to a decade around the data: at least three 1-2-5 ticks fall in it
        centre = float(np.sqrt(low * high))
        low, high = centre / np.sqrt(10.0), centre * np.sqrt(10.0)
        ax.set_xlim(low, high)
    narrow = high / low < 100
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if narrow else (1.0,), numticks=8))
    if narrow:  # plain numbers: matplotlib's log formatter labels only some of 1-2-5
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def timing_figure(timing: pd.DataFrame, styles: dict[tuple[str, str], SeriesStyle], out: Path
                  ) -> tuple[str, str, dict[str, Path]]:
    """Median and interquartile range of per-iteration acquisition and fit time, and total cell time,
    per problem and series, on a log scale; one legend under the three panels."""
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
    legend_and_key(fig, handles, [styles[s].label for s in series], key_lines, width, panels_height, title)
    return "fig_timing", title, save_figure(fig, out, "fig_timing")


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
