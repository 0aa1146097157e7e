"""Reports that join several runs (``--with``): each run said, and the cells both hold compared, so
that a comparison with published rows says whether they pair and whether their seconds compare."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from analysis.across_runs import _verdict, shared_cells
from analysis.data import load_results
from analysis.report import build_report
from harness.cell import run_cell
from harness.results import cell_path, table_checksum
from harness.spec import CellSpec
from harness.store import write_atomic, write_cell

CELLS = [CellSpec.make("branin-1-1-discrete", "random", seed, 2) for seed in (0, 1)]


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of two finished cells: the run the others are compared with."""
    folder = tmp_path_factory.mktemp("published")
    for spec in CELLS:
        write_cell(folder, spec, run_cell(spec))
    return folder


def copy_of(published: Path, into: Path) -> Path:
    shutil.copytree(published, into)
    return into


def test_a_run_that_reproduces_the_shared_cells_says_they_pair(published: Path, tmp_path: Path) -> None:
    mine = copy_of(published, tmp_path / "mine")
    shared = shared_cells(load_results(mine)[0], load_results(published)[0])
    assert len(shared) == 2 and shared["identical"].all()
    assert shared["seconds_ratio"].tolist() == [1.0, 1.0]
    text = _verdict(shared, mine, published)
    assert "2 of them have identical rows" in text and "bit for bit" in text


def test_a_shared_cell_with_other_rows_is_named_with_both_regrets(published: Path, tmp_path: Path) -> None:
    """One cell's last recommendation moved (as another host's rounding or another harness would move
    it): the cell is named as differing, with both final regrets, and read as statistics."""
    mine = copy_of(published, tmp_path / "mine")
    path = cell_path(mine, CELLS[1])
    table = pq.read_table(path)  # its metadata (checksum included) is rewritten below, as a run would
    regret = table.column("regret").to_pylist()
    regret[-1] = regret[-1] * 2 + 1.0
    moved = table.set_column(table.schema.get_field_index("regret"), table.schema.field("regret"),
                             pa.array(regret, type=table.schema.field("regret").type))
    meta = json.loads(table.schema.metadata[b"varbo"])
    meta["checksum"] = table_checksum(moved)
    write_atomic(moved.replace_schema_metadata({"varbo": json.dumps(meta)}), path)
    shared = shared_cells(load_results(mine)[0], load_results(published)[0])
    assert shared["identical"].tolist() == [True, False]
    text = _verdict(shared, mine, published)
    assert "1 of them have identical rows" in text and "seed1" in text and "analysis.recheck" in text


def test_runs_that_share_no_cell_are_said_not_to_be_checked(published: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    spec = CellSpec.make("branin-1-1-discrete", "random", 5, 2)
    write_cell(other, spec, run_cell(spec))
    shared = shared_cells(load_results(other)[0], load_results(published)[0])
    assert shared.empty
    text = _verdict(shared, other, published)
    assert "share no cell" in text and "not comparable" in text


def test_the_report_with_another_run_has_the_section_and_its_table(published: Path, tmp_path: Path) -> None:
    mine = copy_of(published, tmp_path / "mine")
    paths = build_report(mine, tmp_path / "report", also=(published,))
    text = paths["report.md"].read_text()
    assert "## The runs compared" in text and "identical rows" in text
    assert paths["across_runs.csv"].read_text().count("\n") == 3  # a header and the two shared cells
