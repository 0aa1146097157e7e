"""Options declared once (algorithms/options.py): every registered algorithm's declaration matches its
constructor, names and values are checked with one-line messages, plug-ins without a declaration keep
working, the documentation is rendered from the declarations, and the cost models they declare."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from algorithms import ALGORITHMS, build_algorithm
from algorithms.cost import DEFAULT_ITERATION_S, ProblemSize, iteration_seconds
from algorithms.describe import options_on, signature_options
from algorithms.options import (
    Option,
    OptionError,
    check_declaration,
    declared_options,
    declares_options,
    options_markdown,
    resolved_options,
    validate_options,
)
from algorithms.rhokg import RhoKGApx, RhoKGApxReleased, rhokg_evaluations
from problems import build_problem
from tests.plugins.options_plugin import Extended, Listed
from tests.plugins.toy_plugin import Toy

PROBLEM = {"discrete": "branin-1-1-discrete", "continuous": "branin-1-1-continuous"}


def _build(key: str, kind: str, **options: object) -> None:
    factory = ALGORITHMS[key]
    build_algorithm(key, factory, build_problem(PROBLEM[kind], with_optimum=False), 0, **options)


@pytest.mark.parametrize("key", list(ALGORITHMS))
def test_every_registered_algorithm_declares_options_that_match_its_constructor(key: str) -> None:
    """Every keyword of the constructor is declared, with the constructor's default, and nothing
    else is; every declared option is accepted at its default on each kind of Z it applies to."""
    factory = ALGORITHMS[key]
    assert declares_options(factory)
    check_declaration(key, factory)
    declared = {o.name: o for o in declared_options(factory)}
    constructor = {o.name: o for o in signature_options(factory)}
    assert list(declared) == list(constructor)
    for name, option in declared.items():
        assert option.default == constructor[name].default, name
        assert option.z_kind == constructor[name].z_kind or constructor[name].z_kind is None, name
        assert option.meaning.strip(), f"{key}: {name} has no meaning"
    for kind in sorted(factory.z_kinds):
        _build(key, kind, **{o.name: o.default for o in options_on(list(declared.values()), kind)})


def _edges(option: Option) -> tuple[list[object], list[object]]:
    """Values the declaration accepts and values it refuses, at the ends of its range and its type."""
    if option.type is int:
        good, bad = [option.low, (option.low or 0) + 7], [option.low - 1, float(option.low), True, "3"]
    elif option.type is float:
        low = option.low
        good = [low + 1e-6, 1, 3.5] if option.low_open else [low, 1, 3.5]
        bad = [low, -1e-6, float("inf"), float("nan"), True] if option.low_open else [low - 1e-6, True]
        bad = [*bad, *([] if option.choices else ["fast"])]
    else:
        good, bad = list(option.choices), ["nope", 1, None]
    good += list(option.choices)
    return good, bad + ([None] if not option.nullable and option.type is not str else [])


@pytest.mark.parametrize("key", list(ALGORITHMS))
def test_declared_ranges_are_the_constructors(key: str) -> None:
    """At the ends of each declared range, and with values of the wrong type, the declaration and
    the constructor agree: both accept, or both refuse (so that checking the declaration before
    building is the same check)."""
    factory = ALGORITHMS[key]
    for kind in sorted(factory.z_kinds):
        for option in options_on(list(declared_options(factory)), kind):
            good, bad = _edges(option)
            for value in good:
                validate_options(key, factory, {option.name: value})
                _build(key, kind, **{option.name: value})
            for value in bad:
                with pytest.raises(OptionError):
                    validate_options(key, factory, {option.name: value})
                with pytest.raises((TypeError, ValueError)):
                    _build(key, kind, **{option.name: value})


def test_an_unknown_name_gets_the_closest_one_and_the_valid_ones() -> None:
    with pytest.raises(OptionError) as error:
        validate_options("rhokg-apx", RhoKGApx, {"restart_per_dim": 2})
    message = str(error.value)
    assert message.startswith("unknown option 'restart_per_dim' for rhokg-apx (did you mean "
                              "'restarts_per_dim'?); valid: num_fantasies, num_samples,")
    assert "\n" not in message and "cvar_formula" in message
    with pytest.raises(OptionError, match=r"^unknown option 'colour' for vucb-prob; valid: beta, n_raw"):
        validate_options("vucb-prob", ALGORITHMS["vucb-prob"], {"colour": 1})
    with pytest.raises(OptionError, match="unknown option 'beta' for random: it takes no options"):
        validate_options("random", ALGORITHMS["random"], {"beta": 1})


@pytest.mark.parametrize("key, options, message", [
    ("rhokg-apx", {"restarts_per_dim": 2.0},
     "rhokg-apx: restarts_per_dim must be a positive integer, got 2.0"),
    ("rhokg-apx", {"maxiter": True}, "maxiter must be a positive integer, got True"),
    ("rhokg-apx", {"eta": -1}, "rhokg-apx: eta must be a finite number >= 0, got -1"),
    ("rhokg-apx", {"eta": "2"}, "eta must be a finite number >= 0, got '2'"),
    ("rhokg-apx", {"refine": "wrost"},
     "refine must be one of best, worst, got 'wrost'; did you mean 'worst'?"),
    ("vucb-prob", {"beta": 0}, "beta must be 'paper', 'authors' or a positive finite number, got 0"),
    ("vucb-prob", {"beta": "papr"}, "got 'papr'; did you mean 'paper'?"),
    ("vucb-prob", {"n_raw": 0}, "n_raw must be a positive integer or null, got 0"),
    ("vucb-prob", {"lr_x": [0.1]}, "lr_x must be a positive finite number, got [0.1]"),
    ("cvucb", {"lv_rule": None}, "lv_rule must be one of prob, unif, got None"),
])
def test_a_value_of_the_wrong_type_or_out_of_range_is_one_line(key: str, options: dict, message: str) -> None:
    with pytest.raises(OptionError) as error:
        validate_options(key, ALGORITHMS[key], options)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_values_are_kept_as_given_and_no_default_is_added() -> None:
    given = {"eta": 2, "maxiter": 50}
    checked = validate_options("rhokg-apx", RhoKGApx, given)
    assert checked == given and type(checked["eta"]) is int  # an int where a float may be: kept
    assert validate_options("vucb-prob", ALGORITHMS["vucb-prob"], {"n_raw": None}) == {"n_raw": None}
    assert validate_options("vucb-prob", ALGORITHMS["vucb-prob"], {}) == {}
    resolved = resolved_options(ALGORITHMS["vucb-prob"], {"beta": 4}, "discrete")
    assert resolved["beta"] == 4 and resolved["n_restarts"] == 5 and "n_starts" not in resolved


def test_a_subclass_that_changes_defaults_declares_them() -> None:
    released = {o.name: o for o in declared_options(RhoKGApxReleased)}
    method = {o.name: o for o in declared_options(RhoKGApx)}
    assert list(released) == list(method)
    for name, value in RhoKGApxReleased.RELEASED.items():
        assert released[name].default == value != method[name].default
        assert dataclasses.replace(released[name], default=method[name].default) == method[name]


def test_ranges_and_list_values_of_a_plugin_declaration() -> None:
    key = "tests.plugins.options_plugin:Listed"
    assert validate_options(key, Listed, {"weights": [1, 2], "steps": 8, "share": 1}) == {
        "weights": (1, 2), "steps": 8, "share": 1}
    for options, message in (({"steps": 9}, "steps must be an integer in [1, 8], got 9"),
                             ({"share": 0}, "share must be a finite number in (0, 1], got 0"),
                             ({"weights": 3}, "weights must be a list, got 3")):
        with pytest.raises(OptionError, match=message.replace("[", r"\[").replace("(", r"\(")):
            validate_options(key, Listed, options)


def test_a_plugin_that_declares_nothing_keeps_working() -> None:
    assert not declares_options(Toy) and declared_options(Toy) == ()
    with pytest.raises(OptionError, match="for toy: it takes no options"):
        validate_options("toy", Toy, {"x": 1})
    # a subclass of a registered algorithm with an undeclared option of its own: read from its
    # signature, V-UCB's options keep their declared types
    options = {o.name: o for o in declared_options(Extended)}
    assert not declares_options(Extended)
    assert set(options) == {"tilt"} | {o.name for o in declared_options(ALGORITHMS["vucb-prob"])}
    assert options["tilt"].type is object and options["tilt"].meaning == "an undeclared extra."
    assert validate_options("extended", Extended, {"tilt": "anything", "beta": 2}) == {"tilt": "anything",
                                                                                      "beta": 2}
    with pytest.raises(OptionError, match="beta must be 'paper', 'authors' or a positive finite number"):
        validate_options("extended", Extended, {"beta": -1})
    with pytest.raises(OptionError, match=r"\(did you mean 'tilt'\?\)"):
        validate_options("extended", Extended, {"tilts": 1})


def test_a_bad_declaration_is_refused_at_registration() -> None:
    class Twice(Listed):
        options = (Option("a", int, 1, "x", low=1), Option("a", int, 2, "y", low=1))

    class BadDefault(Listed):
        options = (Option("a", int, 0, "x", low=1),)

    with pytest.raises(ValueError, match=r"declares option\(s\) twice: a"):
        check_declaration("twice", Twice)
    with pytest.raises(ValueError, match=r"the default of .*a must be a positive integer, got 0"):
        check_declaration("bad", BadDefault)
    with pytest.raises(TypeError, match="type must be one of"):
        Option("a", list, [], "x")


def test_the_documentation_is_rendered_from_the_declarations() -> None:
    text = options_markdown(ALGORITHMS)
    for key, factory in ALGORITHMS.items():
        assert f"### `{key}`" in text
        for option in declared_options(factory):
            assert f"| `{option.name}` |" in text
    assert "| `restarts_per_dim` | a positive integer | `10` | any | L-BFGS-B restarts per dimension" in text
    assert "| `num_w_samples` | a positive integer | `10` | continuous |" in text
    assert "### `random`\n\nNo options." in text
    assert "``" not in text  # docstring markup turned into Markdown


# ---------------------------------------------------------------------------------------------------
# the declared cost


def test_declared_costs() -> None:
    size = ProblemSize(d_x=1, d_z=1, z_size=100, n_init=3, iterations=60)
    seconds = {key: iteration_seconds(f, size, {}) for key, f in ALGORITHMS.items()
               if "discrete" in f.z_kinds}
    assert seconds["random"] < seconds["vucb-prob"] < seconds["rhokg-apx"]
    assert iteration_seconds(Toy, size, {}) == DEFAULT_ITERATION_S  # declares no model
    rhokg = [iteration_seconds(RhoKGApx, size, {"restarts_per_dim": r}) for r in (1, 2, 4, 8)]
    assert rhokg == sorted(rhokg) and rhokg[0] < rhokg[-1]
    vucb = ALGORITHMS["vucb-prob"]
    assert iteration_seconds(vucb, size, {"n_raw": 1024}) > iteration_seconds(vucb, size, {})
    continuous = ProblemSize(d_x=1, d_z=1, z_size=None, n_init=3, iterations=60)
    assert iteration_seconds(vucb, continuous, {"train_steps": 60}) < iteration_seconds(vucb, continuous, {})


def _counted_evaluations(monkeypatch: pytest.MonkeyPatch, problem: str, options: dict) -> Counter:
    """Acquisition evaluations of two rho-KG^apx proposals, each counted once per fantasy: those
    of the raw candidates (at ``low_fantasies``) and all of them."""
    from algorithms import rhokg
    from harness.cell import CellSpec, run_cell

    counts: Counter = Counter()
    forward = rhokg.RhoKGAcquisition.forward

    def counting(self, X):
        counts["all"] += X.shape[0] * self.xi.numel()
        counts["raw"] += X.shape[0] * self.xi.numel() * (self.xi.numel() == options["low_fantasies"])
        return forward(self, X)

    monkeypatch.setattr(rhokg.RhoKGAcquisition, "forward", counting)
    run_cell(CellSpec.make(problem, "rhokg-apx", 0, iterations=2, options=options))
    return counts


def test_the_rhokg_cost_model_follows_its_measured_evaluations(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model's evaluations (:func:`rhokg_evaluations`), counted in two proposals: the raw
    candidates exactly (restarts_per_dim x (d_x + d_z) x raw_per_restart at low_fantasies), the
    whole within a factor of 2 (L-BFGS-B stops when it converges), and growing with
    restarts_per_dim as the model says (its ratio within a factor of 2 of the counted one)."""
    base = {"raw_per_restart": 50, "maxiter": 25, "low_fantasies": 3}
    for problem, d in (("branin-1-1-discrete", 2), ("hartmann-1-2-discrete", 3)):
        counted = {}
        for r in (1, 4):
            options = {**base, "restarts_per_dim": r}
            counts = _counted_evaluations(monkeypatch, problem, options)
            full = resolved_options(RhoKGApx, options, "discrete")
            assert counts["raw"] == 2 * 3 * r * d * 50
            model = rhokg_evaluations(d, full)
            assert 0.5 < model / (counts["all"] / 2) < 2, (problem, r, model, counts)
            counted[r] = (counts["all"] / 2, model)
        measured_ratio, model_ratio = counted[4][0] / counted[1][0], counted[4][1] / counted[1][1]
        assert measured_ratio > 2 and 0.5 < model_ratio / measured_ratio < 2, (problem, counted)


@pytest.mark.parametrize("key", list(ALGORITHMS))
def test_a_declared_reduced_effort_is_valid_options_on_each_kind_of_z(key: str) -> None:
    """What :meth:`Algorithm.reduced_options` declares (the smoke grid's effort) names declared
    options with valid values, and the algorithm builds with them on each kind of Z it handles."""
    factory = ALGORITHMS[key]
    for kind in sorted(factory.z_kinds):
        reduced = factory.reduced_options(kind)
        if reduced is not None:
            validate_options(key, factory, reduced)
            _build(key, kind, **reduced)


def test_the_one_shot_kg_cost_model_is_its_formula() -> None:
    """botorch-risk's model (its docstring's formula written again here), the same for the one-shot
    rho-KG with its whole support, both searching longer on VaR; the smoke effort keeps only the
    fixed part."""
    from algorithms.botorch_risk import SEARCH_FACTOR

    size = ProblemSize(d_x=2, d_z=2, z_size=12, n_init=72, iterations=120, risk="cvar")
    a, b = 72 / 120, 192 / 120
    cube = (b**4 - a**4) / (4 * (b - a))
    search = (11.0 + 22.7 * (12 / 100) ** 3) * (1 + cube)
    fixed = 0.1 + 0.03 * 12 + 0.008 * (72 + 60)
    assert iteration_seconds(ALGORITHMS["botorch-risk"], size, {}) == pytest.approx(fixed + search)
    oneshot = ALGORITHMS["rhokg-oneshot"]
    assert iteration_seconds(oneshot, size, {}) == pytest.approx(fixed + search)
    var = ProblemSize(d_x=2, d_z=2, z_size=12, n_init=72, iterations=120, risk="var")
    for method in (oneshot, ALGORITHMS["botorch-risk"]):
        assert iteration_seconds(method, var, {}) == pytest.approx(fixed + SEARCH_FACTOR["var"] * search)
    smoke = oneshot.reduced_options("discrete")
    effort = (1 + 2) * 16 * (8 + 1 * 10) / ((1 + 16) * 128 * (128 + 10 * 50))
    assert iteration_seconds(oneshot, size, smoke) == pytest.approx(fixed + effort * search)
