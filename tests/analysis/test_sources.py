"""The table of sources on a study's page (``analysis/sources.py``): one row for each problem and each
method of the study's grids and nothing else, with what each declares; what declares no source says
so, and a source with no deviation reads "none"."""

import re
from dataclasses import replace

import pytest

from algorithms.random_search import RandomSearch
from analysis.sources import NO_DEVIATIONS, NOT_DECLARED, deviations_text, sources_table
from harness.grid import Grid, parse_grid
from harness.spec import CellSpec
from harness.study import Study, installed_studies, load_study
from problems import Problem, build_problem

HERE = "tests.analysis.test_sources"
BARE_PROBLEM, BARE_METHOD = f"{HERE}:bare_problem", f"{HERE}:Bare"


def bare_problem() -> Problem:
    """A user's problem that declares no source (Branin's, its declarations blanked)."""
    return replace(build_problem("branin-1-1-discrete", with_optimum=False), source="", deviations=())


class Bare(RandomSearch):
    """A user's algorithm that declares no source (random search, its declarations blanked)."""

    name = BARE_METHOD
    source = ""
    deviations = ()


def table_rows(table: str) -> dict[tuple[str, str], tuple[str, str]]:
    """(kind, name) -> (source, deviations) of a Markdown table as :func:`sources_table` writes it;
    a row named twice fails."""
    lines = table.splitlines()
    assert lines[0] == "| kind | name | source | deviations |", lines[0]
    rows: dict[tuple[str, str], tuple[str, str]] = {}
    for line in lines[2:]:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        assert len(cells) == 4, line
        key = (cells[0], cells[1].strip("`"))
        assert key not in rows, f"{key} twice"
        rows[key] = (cells[2], cells[3])
    return rows


def grid_cells(study: Study) -> list[CellSpec]:
    """Every cell of the study's grids, built here as the grid runner builds them."""
    return [cell for name, grid in study.grids.items()
            for cell in (parse_grid(grid, name) if isinstance(grid, dict) else grid()).cells]


@pytest.mark.parametrize("name", sorted(installed_studies()))
def test_an_installed_study_has_a_row_per_problem_and_method_of_its_grids_and_no_other(name: str) -> None:
    study = load_study(name)
    cells = grid_cells(study)
    expected = ({("problem", c.problem) for c in cells} | {("method", c.algorithm) for c in cells})
    rows = table_rows(sources_table(study))
    assert set(rows) == expected
    for (kind, row), (source, deviations) in rows.items():  # every registered one declares its source
        assert NOT_DECLARED not in (source, deviations), f"{name}: {kind} {row} declares no source"


def test_what_declares_no_source_says_so_and_no_deviation_reads_none() -> None:
    cells = (CellSpec(BARE_PROBLEM, BARE_METHOD, 0), CellSpec("branin-1-1-discrete", "random", 0))
    study = Study("bare", grids={"bare": lambda: Grid("bare", cells)})
    rows = table_rows(sources_table(study))
    assert rows[("problem", BARE_PROBLEM)] == (NOT_DECLARED, NOT_DECLARED)
    assert rows[("method", BARE_METHOD)] == (NOT_DECLARED, NOT_DECLARED)
    branin = build_problem("branin-1-1-discrete", with_optimum=False)
    assert rows[("problem", "branin-1-1-discrete")] == (branin.source,
                                                        deviations_text(branin.source, branin.deviations))
    assert rows[("method", "random")] == (RandomSearch.source, NO_DEVIATIONS)  # declares none


def test_a_grid_file_table_is_read_as_the_runner_reads_it() -> None:
    grid = {"seeds": [0], "iterations": 1,
            "cells": [{"problems": ["branin-1-1-discrete"], "algorithms": ["random", "stableopt"]}]}
    rows = table_rows(sources_table(Study("toml", grids={"mine": grid})))
    assert set(rows) == {("problem", "branin-1-1-discrete"), ("method", "random"), ("method", "stableopt")}


def test_the_deviations_are_one_cell_of_numbered_sentences() -> None:
    assert deviations_text("a source", ("One.", " Two\n words. ")) == "(1) One. (2) Two words."
    assert deviations_text("a source", ("Only one",)) == "Only one."
    assert deviations_text("a source", ()) == NO_DEVIATIONS
    assert deviations_text("", ()) == NOT_DECLARED
