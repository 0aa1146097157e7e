"""An algorithm's options, defaults and meanings as ``--describe`` and ``--list`` print them, read
from the signatures, the option-settings dataclasses and the docstrings."""

import dataclasses
import inspect
from typing import ClassVar

import pytest

from algorithms import ALGORITHMS, Algorithm, build_algorithm, describe_options
from algorithms.describe import REQUIRED, options_on, parse_options_doc
from algorithms.lnso import LNSOSettings
from algorithms.rhokg import RhoKGApx, RhoKGApxReleased
from algorithms.vucb_continuous import CONTINUOUS_OPTIONS, ContinuousSettings
from problems import build_problem

PROBLEM = {"discrete": "branin-1-1-discrete", "continuous": "branin-1-1-continuous"}


@pytest.mark.parametrize("key", list(ALGORITHMS))
def test_every_option_of_every_registered_algorithm_has_a_meaning(key: str) -> None:
    undocumented = [o.name for o in describe_options(ALGORITHMS[key]) if not o.meaning.strip()]
    assert not undocumented, f"{key}: document {undocumented} in an Options: section of its docstring"


@pytest.mark.parametrize("key", list(ALGORITHMS))
def test_the_described_options_are_the_ones_the_algorithm_takes(key: str) -> None:
    """Built with every option it is said to take on a kind of Z, each at its described default,
    an algorithm accepts them all (a wrong name raises TypeError)."""
    factory = ALGORITHMS[key]
    options = describe_options(factory)
    assert len({o.name for o in options}) == len(options)
    for kind in sorted(factory.z_kinds):
        values = {o.name: o.default for o in options_on(options, kind)}
        build_algorithm(key, factory, build_problem(PROBLEM[kind], with_optimum=False), 0, **values)


def test_explicit_options_come_from_the_signature() -> None:
    for factory in (RhoKGApx, ALGORITHMS["stableopt"], ALGORITHMS["vucb-prob-saa"]):
        expected = {name: p.default for name, p in inspect.signature(factory.__init__).parameters.items()
                    if name not in ("self", "problem", "seed_root", "risk")}
        assert {o.name: o.default for o in describe_options(factory)} == expected
    assert describe_options(ALGORITHMS["random"]) == []


def test_vucb_takes_the_lnso_settings_on_a_continuous_z_only() -> None:
    options = describe_options(ALGORITHMS["vucb-prob"])
    continuous = {o.name: o.default for o in options if o.z_kind == "continuous"}
    assert set(continuous) == CONTINUOUS_OPTIONS
    for settings in (ContinuousSettings, LNSOSettings):
        for field in dataclasses.fields(settings):
            assert continuous[field.name] == field.default
    discrete = {o.name for o in options_on(options, "discrete")}
    assert discrete == {"beta", "n_raw", "n_restarts", "maxiter"}
    assert describe_options(ALGORITHMS["vucb-unif"]) == options  # documented once, on VUCB


def test_a_subclass_that_changes_defaults_passes_the_rest_on() -> None:
    released = {o.name: o for o in describe_options(RhoKGApxReleased)}
    method = {o.name: o for o in describe_options(RhoKGApx)}
    assert list(released) == list(method)  # in rho-KG^apx's order, the released defaults in place
    for name, value in RhoKGApxReleased.RELEASED.items():
        assert released[name].default == value != method[name].default
        assert released[name].meaning == method[name].meaning
    assert released["num_fantasies"] == method["num_fantasies"]
    assert released["num_w_samples"].z_kind == "continuous"


def test_parse_options_doc() -> None:
    doc = """Something.

    Options:
        a: first
            continued.
        b, c (continuous Z): shared ``b``, see :class:`x.Y`.
        d (int): typed, not a kind of Z.

    Returns:
        e: not an option section.

    Attributes:
        f: from attributes.
    """
    assert parse_options_doc(doc) == {
        "a": ("first continued.", None), "b": ("shared b, see x.Y.", "continuous"),
        "c": ("shared b, see x.Y.", "continuous"), "d": ("typed, not a kind of Z.", None),
        "f": ("from attributes.", None)}
    assert parse_options_doc(None) == {}


class Plain(Algorithm):
    """A plug-in with options but no documentation of them (only described here, never run: its
    methods raise)."""

    name = "plain"

    def __init__(self, problem, seed_root, width: float, steps: int = 3, **options) -> None:
        super().__init__(problem, seed_root, **options)

    def propose(self, model, t):
        raise NotImplementedError

    def recommend(self, model, train_X):
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class Extra:
    """Attributes:
    depth: how deep.
    """

    depth: int = 2


class WithSettings(Plain):
    """Options:
        steps: how many steps.
    """

    option_settings: ClassVar = {"discrete": (Extra,)}


def test_undocumented_required_and_settings_options_of_a_plugin() -> None:
    plain = describe_options(Plain)
    assert [(o.name, o.default, o.meaning) for o in plain] == [("width", REQUIRED, ""), ("steps", 3, "")]
    # **options reach Algorithm.__init__, which takes none: nothing more
    settings = describe_options(WithSettings)
    assert [(o.name, o.default, o.meaning, o.z_kind) for o in settings] == [
        ("width", REQUIRED, "", None), ("steps", 3, "how many steps.", None),
        ("depth", 2, "how deep.", "discrete")]
