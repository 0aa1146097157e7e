"""How each series is drawn in every figure of a report: one colour per algorithm (a study may fix
some), and per series (an algorithm with its options) a short label, a line style, a marker and, for
options too long for a legend, a key (``[A]``) that the key table under the legend spells out."""

from __future__ import annotations

import json
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import pandas as pd
import seaborn as sns

from analysis.data import options_text

#: The palette; a study fixes some algorithms' colours (its ``colours``), the rest get the next
#: colours of it by name.
_PALETTE = sns.color_palette("colorblind", 10).as_hex()


def colours(algorithms: list[str], fixed: dict[str, int] | None = None) -> dict[str, str]:
    """Algorithm -> colour, the same in every figure of a report.

    ``fixed`` gives some algorithms a colour of the palette by index, the others take the remaining ones by
    name.

    Args:
        algorithms: the algorithms to colour (repeats allowed).
        fixed: a study's ``colours``, algorithm -> index into the palette.

    Returns:
        Each algorithm of ``algorithms`` -> its colour as a hex string.
    """
    fixed_colours = {a: _PALETTE[i % len(_PALETTE)] for a, i in (fixed or {}).items()}
    spare = [c for c in _PALETTE if c not in fixed_colours.values()]
    out = {a: fixed_colours[a] for a in algorithms if a in fixed_colours}
    for i, a in enumerate(sorted(a for a in set(algorithms) if a not in fixed_colours)):
        out[a] = spare[i % len(spare)]
    return out


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
    """The style of every (algorithm, options JSON) of a report, in a stable order.

    The same inputs give the same labels, keys and markers, whatever order they come in. Series shown alike
    (``shown``) share a style.

    Args:
        series: the (algorithm, options JSON) pairs of a report, repeats allowed.
        fixed: a study's ``colours`` (:func:`colours`).
        shown: the options JSON a series is labelled by, when the study reads its options otherwise
            (:func:`shown_options`: a study's reduced effort is its default).

    Returns:
        Each (algorithm, options JSON) of ``series`` -> its :class:`SeriesStyle`.
    """
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
    """The settings a study reads each series' options as, where they differ from the options.

    An alias's own name is left out (its series are named by it already). A pair read two ways on two problems
    keeps its options.

    Args:
        cells: the cells of :func:`analysis.claim_cells.study_cells`.

    Returns:
        (algorithm, options JSON) -> the settings as canonical JSON, for the pairs read one way only and
        otherwise than their options.
    """
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
