"""The layout of a report's figures: panels on top, then one legend for the figure, then the key
table, nothing outside the canvas (:func:`legend_and_key`, :func:`fit_suptitle`, :func:`log_ticks`);
the check every figure passes as it is saved (:func:`layout_problems`, :func:`save_figure`)."""

from __future__ import annotations

import textwrap
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

#: Inches: figure margins around the legend and key block.
_PAD_IN = 0.12
LEGEND_FONTSIZE = 8
KEY_FONTSIZE = 7.5


def legend_and_key(fig, handles: list, labels: list[str], key_lines: list[str], width_in: float,
                    panels_height_in: float, suptitle: str, fontsize: float = LEGEND_FONTSIZE) -> None:
    """Put one legend for the whole figure and the key table under the panels, as many legend
    columns as fit the width, grow the figure by the height they take, and lay the panels out in
    the space above them. Every size is measured on the renderer, not guessed. ``fontsize``: the
    legend's (points)."""
    renderer = fig.canvas.get_renderer()
    dpi = fig.dpi
    legend = None
    for ncol in range(min(len(labels), 6), 0, -1):
        if legend is not None:
            legend.remove()
        legend = fig.legend(handles, labels, loc="upper center", ncol=ncol, frameon=False,
                            fontsize=fontsize, handlelength=3.0, columnspacing=1.5)
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
    """What a reader would see wrong in ``fig`` as drawn.

    The faults looked for are a text (title, label, tick label, legend entry, key line) outside the canvas, a
    figure legend over a panel, a figure title that runs into a panel, panel titles that run into each other,
    and overlapping tick labels of an axis.

    Args:
        fig: the matplotlib figure, drawn here on its canvas.

    Returns:
        One sentence per fault found, naming the text, legend or panel; empty when none.
    """
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
    """Save ``fig`` as PNG (110 dpi) and PDF under ``out``, and close it.

    It is checked first (:func:`layout_problems`): a figure with a fault is saved anyway (a figure is better
    than none), with a ``UserWarning`` naming its first three faults; the tests keep this empty.

    Args:
        fig: the matplotlib figure.
        out: the folder the files are written to.
        name: the files' stem.

    Returns:
        The paths of the files by format, ``{"png": out / "NAME.png", "pdf": out / "NAME.pdf"}``.
    """
    problems = layout_problems(fig)
    if problems:  # drawn anyway (a figure is better than none); the tests keep this empty
        warnings.warn(f"{name}: " + "; ".join(problems[:3]), stacklevel=2)
    paths = {"png": out / f"{name}.png", "pdf": out / f"{name}.pdf"}
    fig.savefig(paths["png"], dpi=110)
    fig.savefig(paths["pdf"])
    plt.close(fig)
    return paths


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
