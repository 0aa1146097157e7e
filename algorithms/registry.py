"""The registry of algorithms: a plain dict of names to factories.

A factory is called as ``factory(problem, seed_root, **options)`` and returns an
:class:`algorithms.base.Algorithm`. To add an algorithm, subclass it in a module of this package
(its ``name`` is its registry key), decorate the class with :func:`algorithms.base.registered`, name
the module in this file's import of the algorithms' modules (one line, the only one outside the
module and its test), and declare its options in its ``options`` attribute
(:mod:`algorithms.options`; a test requires the declaration to match the constructor and a meaning
for every option of every registered algorithm). The site's algorithms page generates its row, its
section (label ``options-NAME``), the first paragraph of its module's docstring and its options from
the entry (``docs/_ext/varbo_generated.py``); no page needs an edit.
"""

from __future__ import annotations

from collections.abc import Callable

# the algorithms' modules, one a line: importing one registers its classes (@registered)
from algorithms import (  # noqa: F401
    botorch_risk,
    cvts,
    cvucb,
    rahbo,
    random_search,
    rhokg,
    rhokg_oneshot,
    stableopt,
    vucb,
    vucb_saa,
)
from algorithms.base import Algorithm, check_algorithm, registered_classes
from algorithms.describe import OptionDoc
from algorithms.options import check_declaration, describe_options
from problems.plugins import import_object, is_import_path

__all__ = ["ALGORITHMS", "OptionDoc", "algorithm_factory", "describe_options"]

#: The registered algorithms by name, in the order their modules registered them: each class declares
#: its name once (``Algorithm.name``) and is keyed by it here, never by the name typed again.
ALGORITHMS: dict[str, Callable[..., Algorithm]] = {cls.name: cls for cls in registered_classes()}
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
