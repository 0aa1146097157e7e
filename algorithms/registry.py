"""The registry of algorithms: a plain dict of names to factories.

A factory is called as ``factory(problem, seed_root, **options)`` and returns an
:class:`algorithms.base.Algorithm`. To add an algorithm, subclass it (its ``name`` is its registry
key), add the class to the tuple here, and
declare its options in its ``options`` attribute (:mod:`algorithms.options`; a test requires the
declaration to match the constructor and a meaning for every option of every registered algorithm).
The site's algorithms page generates its row, its section (label ``options-NAME``), the first
paragraph of its module's docstring and its options from the entry (``docs/_ext/varbo_generated.py``);
no page needs an edit.
"""

from __future__ import annotations

from collections.abc import Callable

from algorithms.base import Algorithm, check_algorithm
from algorithms.botorch_risk import BotorchRisk
from algorithms.cvts import CVTS
from algorithms.cvucb import CVUCB
from algorithms.describe import OptionDoc
from algorithms.options import check_declaration, describe_options
from algorithms.rahbo import RAHBO
from algorithms.random_search import RandomSearch
from algorithms.rhokg import RhoKGApx, RhoKGApxReleased
from algorithms.rhokg_oneshot import RhoKGOneShot
from algorithms.stableopt import StableOpt
from algorithms.vucb import VUCBProb, VUCBUnif
from algorithms.vucb_saa import VUCBProbSAA
from problems.plugins import import_object, is_import_path

__all__ = ["ALGORITHMS", "OptionDoc", "algorithm_factory", "describe_options"]

#: The registered algorithms by name, in this order: each class declares its name once
#: (``Algorithm.name``) and is keyed by it here, never by the name typed again.
ALGORITHMS: dict[str, Callable[..., Algorithm]] = {cls.name: cls for cls in (
    VUCBUnif, VUCBProb, VUCBProbSAA, StableOpt, RandomSearch, RhoKGApx, RhoKGApxReleased, CVUCB, CVTS,
    BotorchRisk, RhoKGOneShot, RAHBO)}
for _key, _factory in ALGORITHMS.items():  # a class whose name or declarations do not hold fails here
    check_algorithm(_key, _factory)
    check_declaration(_key, _factory)


def algorithm_factory(name: str) -> type[Algorithm]:
    """The algorithm class ``name`` names: a registry key, or an import path ``MODULE:ATTR`` to an
    :class:`Algorithm` subclass in the user's own code (:mod:`problems.plugins`), checked by
    :func:`check_algorithm`. One-line ``KeyError`` (unknown key) or ``ValueError`` otherwise."""
    if name in ALGORITHMS:
        return ALGORITHMS[name]  # type: ignore[return-value]
    if not is_import_path(name):
        raise KeyError(f"unknown algorithm {name!r}; valid: {', '.join(ALGORITHMS)}, "
                       "or an import path MODULE:ATTR")
    factory = import_object(name, "algorithm")
    check_algorithm(name, factory)
    check_declaration(name, factory)
    return factory  # type: ignore[return-value]
