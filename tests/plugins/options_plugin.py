"""Plug-in algorithms for ``tests/algorithms/test_options.py`` and ``tests/harness/test_options_cli.py``,
by import path ``tests.plugins.options_plugin:NAME``: one that declares its options, among them a
list-valued one, and a subclass of a registered algorithm that adds an option without declaring it.
"""

from __future__ import annotations

from algorithms import Algorithm, Proposal, Recommendation
from algorithms.options import Option
from algorithms.vucb import VUCBProb


class Listed(Algorithm):
    """Declares a list-valued option and a bounded one (only validated and described, never run)."""

    name = "listed"
    z_kinds = frozenset({"discrete"})
    options = (
        Option("weights", tuple, (1, 1), "weights of the two halves."),
        Option("steps", int, 2, "steps per iteration.", low=1, high=8),
        Option("share", float, 0.5, "a share.", low=0, high=1, low_open=True),
    )

    def __init__(self, problem, seed_root, weights=(1, 1), steps: int = 2, share: float = 0.5) -> None:
        super().__init__(problem, seed_root)
        self.weights, self.steps, self.share = tuple(weights), steps, share

    # only its declared options are under test (validation, --describe): it is built, never run
    def propose(self, model, t: int) -> Proposal:
        raise NotImplementedError

    def recommend(self, model, train_X) -> Recommendation:
        raise NotImplementedError


class Extended(VUCBProb):
    """V-UCB Prob with one more option, ``tilt``, that it does not declare: its options are read
    from its signature, V-UCB's keeping their declared types.

    Options:
        tilt: an undeclared extra.
    """

    name = "extended"

    def __init__(self, problem, seed_root, tilt: float = 0.0, **options) -> None:
        super().__init__(problem, seed_root, **options)
        self.tilt = tilt
