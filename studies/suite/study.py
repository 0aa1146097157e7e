"""The suite's study: its grid (:mod:`studies.suite.grids`); the claims of its sources come with the
published comparison (issue 40)."""

from __future__ import annotations

from analysis.study import Study
from studies.suite.grids import GRIDS

STUDY = Study(
    name="suite",
    baseline="random",
    grids=GRIDS,
    colours={"vucb-prob": 1, "rhokg-apx": 2, "cvucb": 4, "botorch-risk": 5, "random": 7, "cvts": 6,
             "rhokg-oneshot": 3, "rahbo": 8},
    description="The field's suite: BoRisk's and the CV-UCB paper's problems against the field's methods",
)
