"""The engine's interface to a study: what a study declares, and how the engine finds one.

A study is a value (:class:`Study`): its name, its claims (typed comparisons on named problems and
algorithms), the algorithms that stand in for another one as a variant of it, named option sets,
and the baseline of the report's aggregate view. The engine (``harness``, ``analysis``) reads studies
through this module only and names none of their problems, algorithms or claims.

A study is found by import path ``MODULE:ATTR`` (like a plug-in problem or algorithm) or by name
among the installed studies: the ``varbo.studies`` entry points of the installed distributions
(this project's own, ``nguyen2021``, is one; a user's package adds its own in its
``pyproject.toml``)::

    [project.entry-points."varbo.studies"]
    mine = "my_package.study:STUDY"

Comparisons (each is one sub-claim per problem; see :mod:`analysis.claims` for the tests):

* :class:`Beats` ``a`` ends with a lower log10 regret than ``b``;
* :class:`OnPar` ``a`` and ``b`` end within the equivalence margin of each other;
* :class:`SameQueries` ``a`` (below the smallest mass of Z) queries the same (x, z) as ``b``;
* :class:`Cheaper` ``a``'s per-iteration acquisition time is lower than ``b``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata

from problems.plugins import import_object, is_import_path

#: The entry-point group of installed studies.
ENTRY_POINTS = "varbo.studies"


@dataclass(frozen=True)
class Beats:
    """Sub-claims "``a`` has a lower log10 regret than ``b``", one per problem."""

    problems: tuple[str, ...]
    a: str
    b: str
    kind = "beats"


@dataclass(frozen=True)
class OnPar:
    """Sub-claims "``a`` and ``b`` reach log10 regrets within the margin of each other"."""

    problems: tuple[str, ...]
    a: str
    b: str
    kind = "on_par"


@dataclass(frozen=True)
class SameQueries:
    """Sub-claims "``a`` at alpha below the smallest mass queries exactly ``b``'s (x, z)"."""

    problems: tuple[str, ...]
    a: str
    b: str
    kind = "same_queries"


@dataclass(frozen=True)
class Cheaper:
    """Sub-claims "``a``'s median per-iteration acquisition time is lower than ``b``'s".

    ``problems`` empty: every problem where ``b`` ran. ``a`` may name several algorithms: each that
    ran on a problem is compared there (the first where none did, to say what is missing)."""

    problems: tuple[str, ...]
    a: tuple[str, ...]
    b: str
    kind = "cheaper"


Comparison = Beats | OnPar | SameQueries | Cheaper


@dataclass(frozen=True)
class Figure:
    """A figure of a study: panels of log10 regret against the iteration, one per problem.

    Attributes:
        name: the file stem (``fig3_discrete``).
        title: the figure's title.
        problems: one panel per problem, in this order (row by row).
        shape: (rows, columns) of panels.
        target: the risk measure whose regret the panels show (``var``, ``cvar``, ``worst_case``:
            :mod:`problems.measures`).
        series: the algorithms each panel should show; a panel says which of them it lacks (others
            found in the folder are drawn too).
        always: drawn even when no cell belongs to it (its panels then say "not run"); otherwise only
            when some cell does.
    """

    name: str
    title: str
    problems: tuple[str, ...]
    shape: tuple[int, int]
    target: str
    series: tuple[str, ...] = ()
    always: bool = True


@dataclass(frozen=True)
class Claim:
    """A claim of a study: an id (``C1``), the statement in words, and its comparisons. Its
    verdict is reproduced when every sub-claim is (see :func:`analysis.claims.overall`)."""

    id: str
    statement: str
    comparisons: tuple[Comparison, ...]

    @property
    def headline(self) -> str:
        """The statistic its verdict is read on: ``queries`` and ``time`` for those comparisons,
        the final log10 regret otherwise."""
        kinds = {c.kind for c in self.comparisons}
        if kinds == {"same_queries"}:
            return "queries"
        if kinds == {"cheaper"}:
            return "time"
        return "final"


@dataclass(frozen=True)
class Study:
    """What a study declares.

    Attributes:
        name: the study's name (an entry point's name).
        claims: its claims, in the order they are reported.
        aliases: algorithms that stand in for another one in the claims, tested as a variant of it
            (e.g. a released implementation of a method).
        named_options: option sets named by one word in a variant's name.
        baseline: the algorithm the aggregate view measures every method against ("" for none).
        grids: the study's named grids, name -> a function of no argument that returns a
            :class:`harness.grid.Grid` (``python -m harness.run --grid NAME``; a folder of one of
            them is reported with this study unless told otherwise).
        figures: its figures; a panel of results that no figure shows goes to a figure "other".
        colours: algorithms that keep a colour of the palette (its index) in every figure; others
            get the remaining colours by name.
        description: one line.
    """

    name: str
    claims: tuple[Claim, ...] = ()
    aliases: dict[str, str] = field(default_factory=dict)
    named_options: dict[str, dict] = field(default_factory=dict)
    baseline: str = ""
    grids: dict[str, Callable[[], object]] = field(default_factory=dict)
    figures: tuple[Figure, ...] = ()
    colours: dict[str, int] = field(default_factory=dict)
    description: str = ""

    def claim(self, claim_id: str) -> Claim:
        """The claim called ``claim_id``; one-line ``KeyError`` otherwise."""
        for claim in self.claims:
            if claim.id == claim_id:
                return claim
        raise KeyError(f"study {self.name!r} has no claim {claim_id!r}; "
                       f"it has {', '.join(c.id for c in self.claims) or 'none'}")


#: The study of results that belong to none: no claims, every series on its own.
NO_STUDY = Study("none", description="no study: every series, no claims")


def installed_studies() -> dict[str, str]:
    """The installed studies' names and import paths (the ``varbo.studies`` entry points)."""
    return {ep.name: ep.value for ep in metadata.entry_points(group=ENTRY_POINTS)}


def load_study(name: str) -> Study:
    """The study ``name``: an installed study's name or an import path ``MODULE:ATTR`` to a
    :class:`Study`. One-line ``ValueError`` otherwise."""
    installed = installed_studies()
    path = installed.get(name, name)
    if not is_import_path(path):
        raise ValueError(f"unknown study {name!r}; installed: {', '.join(installed) or 'none'}, "
                         "or an import path MODULE:ATTR")
    study = import_object(path, "study")
    if not isinstance(study, Study):
        raise ValueError(f"study {name!r} ({path}) is a {type(study).__name__}, not an analysis.study.Study")
    return study


def study_of_grid(grid: str) -> Study | None:
    """The installed study that declares a grid named ``grid`` (the first, by name), or None."""
    for name in sorted(installed_studies()):
        study = load_study(name)
        if grid in study.grids:
            return study
    return None
