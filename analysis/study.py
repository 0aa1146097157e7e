"""The study interface under the name it had first: :mod:`harness.study` is its home (the harness reads
a study's grids, and data flows one way: the harness never imports ``analysis``). Studies written
against ``analysis.study`` keep working."""

from harness.study import (
    ENTRY_POINTS,
    KINDS,
    NO_STUDY,
    Beats,
    Cheaper,
    Claim,
    Comparison,
    Complexity,
    Figure,
    OnPar,
    PairComparison,
    SameQueries,
    Study,
    check_study,
    installed_studies,
    load_study,
    study_from_toml,
    study_of_grid,
)

__all__ = ["ENTRY_POINTS", "KINDS", "NO_STUDY", "Beats", "Cheaper", "Claim", "Comparison", "Complexity",
           "Figure", "OnPar", "PairComparison", "SameQueries", "Study", "check_study", "installed_studies",
           "load_study", "study_from_toml", "study_of_grid"]
