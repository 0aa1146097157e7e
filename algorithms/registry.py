"""The registry of algorithms: a plain dict of names to factories.

A factory is called as ``factory(problem, seed_root, **options)`` and returns an
:class:`algorithms.base.Algorithm`. To add an algorithm, subclass it and add one entry here.
"""

from __future__ import annotations

from collections.abc import Callable

from algorithms.base import Algorithm, check_algorithm
from algorithms.random_search import RandomSearch
from algorithms.rhokg import RhoKGApx, RhoKGApxReleased
from algorithms.stableopt import StableOpt
from algorithms.vucb import VUCBProb, VUCBUnif
from algorithms.vucb_saa import VUCBProbSAA

ALGORITHMS: dict[str, Callable[..., Algorithm]] = {
    "vucb-unif": VUCBUnif,
    "vucb-prob": VUCBProb,
    "vucb-prob-saa": VUCBProbSAA,
    "stableopt": StableOpt,
    "random": RandomSearch,
    "rhokg-apx": RhoKGApx,
    "rhokg-apx-released": RhoKGApxReleased,
}
for _key, _factory in ALGORITHMS.items():  # a class whose name or declarations do not hold fails here
    check_algorithm(_key, _factory)
