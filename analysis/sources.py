"""The table of sources of a study's page: every problem and method its grids run, where each comes
from and every way this project's version differs from it.

The facts are declared once, with the object: a problem's ``source`` and ``deviations`` fields
(:class:`problems.Problem`), an algorithm's class attributes of the same names
(:class:`algorithms.Algorithm`). This module only reads them, for whatever study it is given (names
come from the study's grids; a plug-in ``MODULE:ATTR`` is resolved by the registries' own lookups), so
a page cannot state a source the code does not declare. A study's page module puts the table in a
generated block (:func:`analysis.pages.render`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

from algorithms.registry import algorithm_factory
from analysis.pages import md_table
from harness.grid import parse_grid
from harness.study import Study
from problems import build_problem

#: What the table says of a problem or method that declares no source (``source = ""``).
NOT_DECLARED = "(not declared)"
#: What it says of one that declares its source and no deviation.
NO_DEVIATIONS = "none"
#: The table's columns.
COLUMNS = ("kind", "name", "source", "deviations")


@dataclass(frozen=True)
class SourceRow:
    """One row of the table: ``kind`` (``problem`` or ``method``), the name as the grids write it,
    and the declared ``source`` and ``deviations`` (as declared: empty when not)."""

    kind: str
    name: str
    source: str
    deviations: tuple[str, ...]


def grid_names(study: Study) -> tuple[list[str], list[str]]:
    """The problems and the algorithms of ``study``'s grids, each once, in the order the grids (in
    the study's order) first name them. A grid declared as a grid file's table is parsed as the
    grid runner parses it (:func:`harness.grid.parse_grid`).

    Args:
        study: the study whose grids are read.

    Returns:
        (problem names, algorithm names).
    """
    problems: dict[str, None] = {}
    algorithms: dict[str, None] = {}
    for name, declared in study.grids.items():
        grid = parse_grid(declared, name) if isinstance(declared, dict) else declared()
        for cell in grid.cells:
            problems.setdefault(cell.problem)
            algorithms.setdefault(cell.algorithm)
    return list(problems), list(algorithms)


def declared(obj: object) -> tuple[str, tuple[str, ...]]:
    """The ``source`` and ``deviations`` an object declares (a :class:`problems.Problem` or an
    algorithm class); what it lacks counts as undeclared (a user's class need not subclass
    :class:`algorithms.Algorithm` to be read here, only to run).

    Args:
        obj: the problem or the algorithm class.

    Returns:
        (source, deviations), ``""`` and ``()`` where nothing is declared.
    """
    return str(getattr(obj, "source", "") or ""), tuple(getattr(obj, "deviations", ()) or ())


def source_rows(study: Study) -> list[SourceRow]:
    """One row per problem, then one per algorithm, of ``study``'s grids (:func:`grid_names`), with
    what each declares: a problem as built (:func:`problems.build_problem`, the registry's factory
    or a plug-in's), an algorithm as its class (:func:`algorithms.registry.algorithm_factory`).

    Args:
        study: the study whose grids are read.

    Returns:
        The rows, problems first, each kind in the grids' order.
    """
    problems, algorithms = grid_names(study)
    rows = [SourceRow("problem", name, *declared(build_problem(name, with_optimum=False)))
            for name in problems]
    rows += [SourceRow("method", name, *declared(algorithm_factory(name))) for name in algorithms]
    return rows


def deviations_text(source: str, deviations: Iterable[str]) -> str:
    """The deviations cell: the sentences, each ending in a full stop, numbered (1), (2), ... where
    there are several, so that each reads as the sentence it was declared as; :data:`NO_DEVIATIONS`
    where a declared source has none, :data:`NOT_DECLARED` where nothing is declared (an empty tuple
    then says nothing).

    Args:
        source: the declared source ("" for none).
        deviations: the declared deviations.

    Returns:
        The cell's text.
    """
    sentences = [" ".join(d.split()).rstrip(".") + "." for d in deviations if d.strip()]
    if len(sentences) == 1:
        return sentences[0]
    if sentences:
        return " ".join(f"({i}) {sentence}" for i, sentence in enumerate(sentences, start=1))
    return NO_DEVIATIONS if source.strip() else NOT_DECLARED


def sources_table(study: Study) -> str:
    """The Markdown table of ``study``'s sources: one row per problem and per algorithm of its grids
    (:func:`source_rows`), with its kind, name, source and deviations (:func:`deviations_text`); a
    missing source reads :data:`NOT_DECLARED`.

    Args:
        study: the study whose grids are read.

    Returns:
        The table, one line per row after the header.
    """
    rows = [{"kind": row.kind, "name": f"`{row.name}`",
             "source": " ".join(row.source.split()) or NOT_DECLARED,
             "deviations": deviations_text(row.source, row.deviations)}
            for row in source_rows(study)]
    return md_table(pd.DataFrame(rows, columns=list(COLUMNS)))
