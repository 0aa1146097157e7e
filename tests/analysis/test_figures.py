"""Panel placement, colours and what a reader sees: the paper's layout, extra settings kept, one colour
per algorithm, labels and legends inside the canvas, coinciding lines told apart."""

import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from analysis import figures as figures_module
from analysis.figure_layout import layout_problems
from analysis.figure_styles import LABEL_OPTIONS_CHARS, colours, series_styles
from analysis.figures import OTHER, assign_figures, regret_figures, timing_figure
from studies.nguyen2021.study import STUDY
from studies.suite.study import STUDY as SUITE

#: the paper's figures and the suite's (a tall 4 x 2 grid of panels among them)
FIGURES = STUDY.figures + SUITE.figures


def _bands(rows: list[tuple[str, float, str, int]]) -> pd.DataFrame:
    """Iteration-0 band rows: (problem, alpha, target, seeds)."""
    return pd.DataFrame([{"problem": p, "alpha": a, "target": t, "iteration": 0, "n_seeds": n}
                         for p, a, t, n in rows])


def test_paper_layout_and_other_settings() -> None:
    panels = assign_figures(_bands([
        ("hartmann-2-1-discrete", 0.1, "var", 20),
        ("branin-1-1-discrete", 0.1, "var", 30),
        ("branin-1-1-discrete", 0.05, "var", 4),  # another alpha: not the paper's panel
        ("branin-1-1-discrete", 4e-13, "worst_case", 30),
        ("robot-push-3-2", 0.1, "var", 30),
        ("my-problem", 0.1, "var", 3),
        ("hartmann-1-2-discrete", 0.1, "cvar", 10),
        ("branin-1-1-continuous", 0.1, "cvar", 10),
    ]), FIGURES).set_index(["problem", "alpha", "target"])
    where = ["figure", "position"]
    assert tuple(panels.loc[("branin-1-1-discrete", 0.1, "var"), where]) == ("fig3_discrete", 0)
    assert tuple(panels.loc[("hartmann-2-1-discrete", 0.1, "var"), where]) == ("fig3_discrete", 3)
    assert panels.loc[("branin-1-1-discrete", 0.05, "var"), "figure"] == OTHER
    assert panels.loc[("branin-1-1-discrete", 4e-13, "worst_case"), "figure"] == "fig_alpha0"
    assert tuple(panels.loc[("robot-push-3-2", 0.1, "var"), where]) == ("fig5_simulated", 1)
    assert panels.loc[("my-problem", 0.1, "var"), "figure"] == OTHER
    assert sorted(panels.loc[panels["figure"] == OTHER, "position"]) == [0, 1]
    # CVaR cells: the paper's layouts, in figures of their own
    assert tuple(panels.loc[("hartmann-1-2-discrete", 0.1, "cvar"), where]) == ("fig_cvar_discrete", 2)
    assert tuple(panels.loc[("branin-1-1-continuous", 0.1, "cvar"), where]) == ("fig_cvar_continuous", 0)


def test_one_colour_per_algorithm_whatever_the_set() -> None:
    few = colours(["vucb-prob", "rhokg-apx"], STUDY.colours)
    many = colours(["random", "rhokg-apx", "stableopt", "vucb-prob", "vucb-unif", "mine", "yours"],
                   STUDY.colours)
    assert few["vucb-prob"] == many["vucb-prob"] and few["rhokg-apx"] == many["rhokg-apx"]
    assert len(set(many.values())) == len(many)


# ---------------------------------------------------------------------------------------------------
# what a reader sees: labels, legends and keys inside the canvas, coinciding lines told apart

LONG = json.dumps({"gp": "borisk", "maxiter": 100, "raw_per_restart": 10, "restarts_per_dim": 2,
                   "num_fantasies": 10, "tts_frequency": 10})
SERIES = [("vucb-unif", "{}"), ("vucb-prob", "{}"), ("rhokg-apx", "{}"), ("random", "{}"),
          ("vucb-prob", json.dumps({"beta": "authors"})), ("rhokg-apx", LONG),
          ("rhokg-apx-released", LONG), ("vucb-unif", json.dumps({"beta": "authors", "gp": "borisk"})),
          ("stableopt", "{}"), ("my.module:MyAlgorithm", json.dumps({"a_rather_long_option_name": 0.5}))]


def test_series_styles_are_short_distinct_and_stable() -> None:
    styles = series_styles(SERIES, STUDY.colours)
    again = series_styles(list(reversed(SERIES)), STUDY.colours)
    assert styles == again  # the order the cells come in changes nothing
    assert len({s.marker for s in styles.values()}) == len(SERIES)
    assert len({s.label for s in styles.values()}) == len(SERIES)
    for (algorithm, options), style in styles.items():
        text = ", ".join(f"{k}={v}" for k, v in json.loads(options).items())
        assert style.options_text == text
        if not text:
            assert style.label == algorithm and style.linestyle == "-" and style.key is None
        elif len(text) <= LABEL_OPTIONS_CHARS:
            assert style.label == f"{algorithm} {text}" and style.key is None
        else:  # long options: a key in the label, spelled out in the key table
            assert style.label == f"{algorithm} {style.key}" and style.key.startswith("[")
        assert style.colour == styles[algorithm, options].colour
    beta = json.dumps({"beta": "authors"})
    assert styles["vucb-prob", "{}"].colour == styles["vucb-prob", beta].colour
    assert styles["vucb-prob", "{}"].linestyle != styles["vucb-prob", beta].linestyle


def _series_bands(problems: tuple[str, ...], target: str, alpha: float, series: list[tuple[str, str]],
           iterations: int, identical: bool = False) -> pd.DataFrame:
    """Band rows of every series on every problem; with ``identical`` every series has the same values."""
    rows = []
    for problem in problems:
        for k, (algorithm, options) in enumerate(series):
            for it in range(iterations + 1):
                mean = -it / 10 - (0 if identical else 0.3 * k)
                rows.append({"problem": problem, "alpha": alpha, "target": target, "algorithm": algorithm,
                             "options": options, "iterations": iterations, "iteration": it, "mean": mean,
                             "lower": mean - 0.2, "upper": mean + 0.2, "n_seeds": 3 + k % 2,
                             "n_floor": int(k == 1)})
    return pd.DataFrame(rows)


def _collect(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Record the layout problems of every figure as it is saved (each drawing of a name adds its own:
    a later, emptier drawing must not hide an earlier one's)."""
    found: dict[str, list[str]] = {}
    save = figures_module.save_figure

    def checked(fig, out: Path, name: str) -> dict[str, Path]:
        found[name] = found.get(name, []) + layout_problems(fig)
        return save(fig, out, name)

    monkeypatch.setattr(figures_module, "save_figure", checked)
    return found


def test_every_label_legend_and_key_lies_inside_the_canvas(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    found = _collect(monkeypatch)
    frames = [_series_bands(spec.problems, spec.target, 0.1 if spec.target == "var" else 1e-3, SERIES, 60)
              for spec in FIGURES]
    frames.append(_series_bands(("my.module:my_problem_with_a_long_name",), "var", 0.2, SERIES[:3], 60))
    frames.append(_series_bands(("my_lab.experiments.risk_averse.problems:a_problem_with_an_even_longer_name",),
                                "var", 0.3, SERIES[:2], 60))
    frames.append(_series_bands(("branin-1-1-discrete",), "var", 0.05, SERIES[:2], 20))  # another alpha
    bands = pd.concat(frames, ignore_index=True)
    panels = assign_figures(bands, FIGURES)
    bands = bands.merge(panels[["problem", "alpha", "target", "figure"]], on=["problem", "alpha", "target"])
    styles = series_styles(SERIES, STUDY.colours)
    drawn = regret_figures(bands, panels, styles, tmp_path, figures=FIGURES)
    timing = pd.DataFrame([{"problem": p, "alpha": 0.1, "target": "var", "algorithm": a, "options": o,
                            "iterations": 60, "n_cells": 3, **{f"{m}_{q}": v * f
                                                               for m, v in (("acq_s", 3e-5), ("fit_s", 0.01),
                                                                            ("total_s", 2.0))
                                                               for q, f in (("q25", 0.5), ("median", 1.0),
                                                                            ("q75", 4000.0))}}
                           for p in ("branin-1-1-discrete", "robot-push-3-2") for a, o in SERIES])
    drawn.append(timing_figure(timing, styles, tmp_path))
    # less than two decades on an axis: matplotlib labels its minor ticks, which collide
    found_wide = found.pop("fig_timing")
    for low, median, high in ((3.0, 7.0, 38.0), (2.4e-3, 2.6e-3, 3.0e-3), (1.2e-4, 1.2e-4, 1.2e-4)):
        narrow = timing.assign(**{f"total_s_{q}": v for q, v in (("q25", low), ("median", median),
                                                                  ("q75", high))})
        timing_figure(narrow, styles, tmp_path)
        assert found.pop("fig_timing") == [], (low, high)
    found["fig_timing"] = found_wide
    names = [name for name, _, _ in drawn]
    assert set(names) >= {"fig3_discrete", "fig4_continuous", "fig5_simulated", "fig_alpha0", "fig_other",
                          "fig_timing", "fig_cvar_discrete", "fig_cvar_continuous", "fig_cvar_simulated"}
    # without CVaR cells the CVaR figures are not drawn (the paper's are, empty)
    var_only = bands.loc[bands["target"] != "cvar"]
    (tmp_path / "v").mkdir()
    names_var = [n for n, _, _ in regret_figures(var_only, assign_figures(var_only, FIGURES), styles,
                                                 tmp_path / "v", figures=FIGURES)]
    assert not any(n.startswith("fig_cvar") for n in names_var) and "fig3_discrete" in names_var
    assert found.keys() == set(names)
    assert all(problems == [] for problems in found.values()), found


def test_the_check_finds_a_legend_outside_the_canvas_and_one_over_a_panel() -> None:
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0, 1], [0, 1], label="a series with a rather long label indeed, longer than the canvas")
    fig.legend(loc="upper left", bbox_to_anchor=(0.3, 0.9))
    problems = layout_problems(fig)
    plt.close(fig)
    assert any("outside the canvas" in p for p in problems)
    assert any("covers the panel" in p for p in problems)
    fig, ax = plt.subplots(figsize=(1.2, 1.2))
    ax.set_xticks(range(30))
    ax.set_xticklabels([f"label{i}" for i in range(30)])
    problems = layout_problems(fig)
    plt.close(fig)
    assert any("overlap" in p for p in problems)


def test_coinciding_series_show_every_series(tmp_path: Path) -> None:
    """StableOpt and V-UCB at alpha -> 0 can coincide exactly (C7): each line keeps its own markers,
    at its own offset, and its own legend entry."""
    series = [("stableopt", "{}"), ("vucb-unif", "{}"), ("vucb-prob", "{}")]
    spec = next(s for s in FIGURES if s.name == "fig_alpha0")
    bands = _series_bands(spec.problems, "worst_case", 1e-3, series, 60, identical=True)
    panels = assign_figures(bands, FIGURES)
    bands = bands.merge(panels[["problem", "alpha", "target", "figure"]], on=["problem", "alpha", "target"])
    fig, ax = plt.subplots()
    lines = figures_module._draw_panel(ax, bands, spec.problems[0], 1e-3, "worst_case",
                                       series_styles(series, STUDY.colours), show_alpha=True)
    ys = [tuple(line.get_ydata()) for line in lines.values()]
    assert len(set(ys)) == 1  # the data coincide
    marks = [frozenset(np.arange(61)[line.get_markevery()[0]::line.get_markevery()[1]])
             for line in lines.values()]
    assert len({line.get_marker() for line in lines.values()}) == 3
    assert all(a != b for i, a in enumerate(marks) for b in marks[i + 1:])  # markers at different iterations
    plt.close(fig)
    drawn = regret_figures(bands, panels, series_styles(series, STUDY.colours), tmp_path, figures=FIGURES)
    title = next(t for name, t, _ in drawn if name == "fig_alpha0")
    assert "stableopt, vucb-prob, vucb-unif" in title  # the title names what it shows


def test_a_panel_names_the_series_it_lacks_and_each_series_seeds_where_they_differ() -> None:
    """A quick grid stopped early: rho-KG^apx alone on a panel that should show V-UCB too, and a
    one-seed series beside a three-seed one."""
    rows = [{"problem": "robot-push-3-2", "alpha": 0.1, "target": "var", "algorithm": algorithm,
             "options": "{}", "iterations": 2, "iteration": it, "mean": -1.0, "lower": -1.5, "upper": -0.5,
             "n_seeds": n, "n_floor": 0}
            for algorithm, n in (("rhokg-apx", 1), ("random", 3)) for it in range(3)]
    bands = pd.DataFrame(rows)
    styles = series_styles([("rhokg-apx", "{}"), ("random", "{}")], STUDY.colours)
    fig, ax = plt.subplots()
    figures_module._draw_panel(ax, bands, "robot-push-3-2", 0.1, "var", styles, show_alpha=False,
                               expected=("vucb-unif", "vucb-prob", "rhokg-apx"))
    title = ax.get_title()
    plt.close(fig)
    assert "(n: random 3, rhokg-apx 1)" in title
    assert "missing: vucb-unif, vucb-prob" in title and "missing: vucb-unif, vucb-prob, rhokg" not in title
    fig, ax = plt.subplots()
    figures_module._draw_panel(ax, bands.assign(n_seeds=3), "robot-push-3-2", 0.1, "var", styles,
                               show_alpha=False)
    assert "(n=3)" in ax.get_title() and "missing" not in ax.get_title()
    plt.close(fig)


def test_a_panel_lacks_only_what_the_folders_grid_planned_there(tmp_path: Path, monkeypatch) -> None:
    """Figure 5's series are V-UCB Unif, V-UCB Prob and rho-KG^apx, but the paper grid runs V-UCB Unif
    on robot pushing only: the portfolio panel must not call it missing when the grid never planned
    it, and must when there is no grid record (every series of the figure is then expected)."""
    from analysis.report import planned_series

    spec = next(s for s in FIGURES if s.name == "fig5_simulated")
    series = [("vucb-prob", "{}"), ("rhokg-apx", "{}")]
    bands = _series_bands(spec.problems, "var", 0.1, series, 5)
    panels = assign_figures(bands, FIGURES)
    bands = bands.merge(panels[["problem", "alpha", "target", "figure"]], on=["problem", "alpha", "target"])
    styles = series_styles(series, STUDY.colours)
    grid = {"cells": [{"problem": p, "algorithm": a} for p in spec.problems for a, _ in series]
            + [{"problem": "robot-push-3-2", "algorithm": "vucb-unif", "risk": "var"}]}
    titles: dict[str, list[str]] = {}
    save = figures_module.save_figure

    def keep_titles(fig, out: Path, name: str) -> dict[str, Path]:
        titles[out.name] = [ax.get_title() for ax in fig.axes if ax.get_visible()]
        return save(fig, out, name)

    monkeypatch.setattr(figures_module, "save_figure", keep_titles)
    for planned, folder in ((planned_series(grid), "grid"), (None, "none")):
        (tmp_path / folder).mkdir()
        regret_figures(bands, panels, styles, tmp_path / folder, figures=(spec,), planned=planned)
    for folder, portfolio_lacks in (("grid", False), ("none", True)):
        portfolio, robot = (next(t for t in titles[folder] if t.startswith(p)) for p in spec.problems)
        assert ("missing: vucb-unif" in portfolio) == portfolio_lacks, (folder, portfolio)
        assert "missing: vucb-unif" in robot, (folder, robot)
    assert planned_series({}) is None and planned_series({"cells": "damaged"}) is None
    # a cell at an explicit alpha may be scored on the worst case; at the default alpha it is not
    planned = planned_series({"cells": [{"problem": "p", "algorithm": "a", "alpha": 1e-9, "risk": "var"},
                                        {"problem": "q", "algorithm": "a", "alpha": None, "risk": "cvar"}]})
    assert planned == {("p", "a", "var"), ("p", "a", "worst_case"), ("q", "a", "cvar")}


def test_a_grid_with_some_problems_of_a_figure_says_which_it_never_planned(tmp_path: Path,
                                                                          monkeypatch) -> None:
    """paper-extra runs Hartmann-(1,2) of Figure 3 only: its other panels say "not in this grid",
    not "not run"; the alpha -> 0 figure, which it never plans at the worst-case target, is not drawn;
    without a grid record, every empty panel says "not run"."""
    from analysis.report import planned_series

    fig3 = next(s for s in FIGURES if s.name == "fig3_discrete")
    alpha0 = next(s for s in FIGURES if s.name == "fig_alpha0")
    series = [("vucb-prob", "{}")]
    bands = _series_bands(("hartmann-1-2-discrete",), "var", 0.1, series, 5)
    panels = assign_figures(bands, FIGURES)
    bands = bands.merge(panels[["problem", "alpha", "target", "figure"]], on=["problem", "alpha", "target"])
    grid = {"cells": [{"problem": "hartmann-1-2-discrete", "algorithm": "vucb-prob", "risk": "var"}]}
    texts: dict[str, list[str]] = {}
    save = figures_module.save_figure

    def keep_texts(fig, out: Path, name: str) -> dict[str, Path]:
        texts[f"{out.name}/{name}"] = sorted(t.get_text() for ax in fig.axes for t in ax.texts)
        return save(fig, out, name)

    monkeypatch.setattr(figures_module, "save_figure", keep_texts)
    for planned, folder in ((planned_series(grid), "grid"), (None, "none")):
        (tmp_path / folder).mkdir()
        regret_figures(bands, panels, series_styles(series, STUDY.colours), tmp_path / folder,
                       figures=(fig3, alpha0), planned=planned)
    assert texts["grid/fig3_discrete"] == ["not in this grid"] * 3
    assert "grid/fig_alpha0" not in texts
    assert texts["none/fig3_discrete"] == ["not run"] * 3 and texts["none/fig_alpha0"] == ["not run"] * 4


def test_a_study_labels_its_reduced_effort_plain_and_the_full_effort_as_a_variant() -> None:
    """A study's reduced effort (and a problem's own options) is its default: those series are named
    by the algorithm alone and share one style; the defaults, its full effort, are ``effort=full``."""
    from algorithms.botorch_risk import BotorchRisk
    from analysis.claim_cells import cell_values
    from analysis.figure_styles import shown_options

    reduced = dict(BotorchRisk.reduced_options("discrete"))  # every problem below has a discrete Z
    rows = []
    for problem, options in (("branin-williams-2-2", reduced), ("hartmann6-5-1", {**reduced, "w_set": 40}),
                             ("yacht-5-1", {})):
        for t in range(2):
            rows.append({"problem": problem, "algorithm": "botorch-risk", "alpha": 0.3, "target": "cvar",
                         "options": json.dumps(options, sort_keys=True), "iterations": 1, "seed": 0,
                         "iteration": t, "log10_regret": -1.0, "t_acq_s": 1.0})
    frame = pd.DataFrame(rows)
    fixed = {"hartmann6-5-1": {"botorch-risk": {"w_set": 40}}}
    cells = cell_values(frame, reduced=("botorch-risk",), fixed=fixed)
    series = list(dict.fromkeys(zip(frame["algorithm"], frame["options"], strict=True)))
    styles = series_styles(series, STUDY.colours, shown_options(cells))
    labels = {options: styles["botorch-risk", options].label for _, options in series}
    assert labels == {json.dumps(reduced, sort_keys=True): "botorch-risk",
                      json.dumps({**reduced, "w_set": 40}, sort_keys=True): "botorch-risk",
                      "{}": "botorch-risk effort=full"}
    a, b = (styles["botorch-risk", o] for o, label in labels.items() if label == "botorch-risk")
    assert (a.colour, a.linestyle, a.marker) == (b.colour, b.linestyle, b.marker)
    assert series_styles(series, STUDY.colours)["botorch-risk", "{}"].label == "botorch-risk"  # no study


def _lab(hex_colour: str) -> np.ndarray:
    """CIE L*a*b* (D65) of an sRGB colour ``#rrggbb``, from the standard's formulas."""
    rgb = np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)]) / 255
    linear = np.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def test_the_suites_methods_drawn_together_have_colours_a_reader_tells_apart() -> None:
    """In each figure of the suite the methods' colours lie at least 30 CIE76 units apart (CV-UCB's
    and CV-TS's were 21 apart, and readers could not tell them apart at the page's width)."""
    import itertools

    from studies.suite.study import STUDY as SUITE

    for figure in SUITE.figures:
        colour = colours(list(figure.series), SUITE.colours)
        for a, b in itertools.combinations(figure.series, 2):
            distance = float(np.linalg.norm(_lab(colour[a]) - _lab(colour[b])))
            assert distance >= 30, f"{figure.name}: {a} and {b} are {distance:.1f} apart"


def test_the_across_problems_figures_read_at_the_pages_width(tmp_path, monkeypatch) -> None:
    """The cost-quality figure of eight panels is drawn at most 930 px wide (the built site's figure
    width at a 1280 px window, 929 px measured in Chromium, so it is shown at its own size) with
    every tick label, axis label and panel title at 16 px or more (the body text's size there):
    its tick labels were 6-7 px at three panels a row."""
    from PIL import Image

    from analysis import across_figures

    sizes: list[float] = []
    save = across_figures.save_figure

    def measure(fig, out, name):
        for ax in fig.axes:
            texts = [*ax.get_xticklabels(), *ax.get_yticklabels(), ax.xaxis.label, ax.yaxis.label, ax.title]
            sizes.extend(t.get_fontsize() for t in texts if t.get_text())
        return save(fig, out, name)

    monkeypatch.setattr(across_figures, "save_figure", measure)
    rng = np.random.default_rng(0)
    quartiles = ("q25", "median", "q75")

    def three(name: str, low: float, high: float) -> dict[str, float]:
        return dict(zip([f"{name}_{q}" for q in quartiles], sorted(rng.uniform(low, high, 3)), strict=True))

    rows = [{"problem": f"problem-{p}", "target": "cvar", "algorithm": m, **three("seconds", 0.01, 5),
             **three("final", -3, 1)} for p in range(8) for m in ("a", "b", "c")]
    _, _, paths = across_figures.cost_quality_figure(
        pd.DataFrame(rows), {"a": "#0173b2", "b": "#029e73", "c": "#d55e00"}, tmp_path)
    assert Image.open(paths["png"]).size[0] <= 930
    assert sizes and min(sizes) * 110 / 72 >= 16, min(sizes)
