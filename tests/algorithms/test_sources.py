"""Every registered algorithm states where it comes from and every way it differs from its source
(``Algorithm.source``, ``Algorithm.deviations``), which the study pages' tables of sources show
(``analysis/sources.py``); where a deviation names the option that reproduces the source, that option
exists and the value named is not what runs by default."""

import re

import pytest

from algorithms import ALGORITHMS, Algorithm
from algorithms.registry import describe_options
from algorithms.rhokg import RhoKGApx, RhoKGApxReleased
from tests.problems.test_sources import check_sentences

#: An option set to a value in a deviation's text: `name="value"`.
OPTION_VALUE = re.compile(r'`(\w+)="([^"]*)"`')


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_every_registered_algorithm_declares_its_source_and_deviations(name: str) -> None:
    factory = ALGORITHMS[name]
    assert isinstance(factory.source, str) and factory.source.strip(), f"{name} declares no source"
    assert "\n" not in factory.source, f"{name}: the source is one line"
    check_sentences(name, factory.deviations)


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_an_option_a_deviation_names_exists_and_is_not_the_default(name: str) -> None:
    """`option="value"` in a deviation is how to get the source's behaviour: the class must have that
    option, and the value must not be its default (else the default would be the source's)."""
    factory = ALGORITHMS[name]
    defaults = {o.name: o.default for o in describe_options(factory)}
    for sentence in factory.deviations:
        for option, value in OPTION_VALUE.findall(sentence):
            assert option in defaults, f"{name}: a deviation names {option!r}, which it has not"
            assert defaults[option] != value, f"{name}: {option}={value!r} is its default already"


def test_the_base_class_declares_nothing() -> None:
    assert Algorithm.source == "" and Algorithm.deviations == ()


def test_the_released_rho_kg_keeps_only_what_its_options_cannot_give_back() -> None:
    """rho-KG^apx's departures from BoRisk's released code are the released variant's defaults, so
    they are not its deviations; what both do differently from BoRisk's code is both classes'."""
    method_only = set(RhoKGApx.deviations) - set(RhoKGApxReleased.deviations)
    assert method_only and all(OPTION_VALUE.search(d) for d in method_only)
    assert set(RhoKGApxReleased.deviations) < set(RhoKGApx.deviations)
    assert RhoKGApxReleased.source.startswith(RhoKGApx.source)
