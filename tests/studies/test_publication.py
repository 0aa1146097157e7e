"""The published reproduction (docs/reproduction/): its tables are rebuilt from its committed rows and
must equal the committed ones, and its page's generated blocks must equal what its tables give.

The one place where the project checks its code against its own recorded output, on purpose: a
change to the analysis that moves a published verdict or number fails here until the publication is
rebuilt (python -m analysis.report docs/reproduction/paper, then python -m studies.nguyen2021.page)
and committed with the change that moved it.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.report import read_frame, report_tables, results_study
from studies.nguyen2021 import page

#: one worker for the module (xdist ``loadgroup``): the rebuilt tables of each published folder
#: (7-8 s for the paper run's) are computed once, not once per worker that takes one of its tests
pytestmark = pytest.mark.xdist_group("publication")

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "docs" / "reproduction" / "paper"
EXTRA = ROOT / "docs" / "reproduction" / "paper-extra"
CVAR = ROOT / "docs" / "reproduction" / "cvar"
SUITE = ROOT / "docs" / "reproduction" / "suite"
SUITE_EFFORT = ROOT / "docs" / "reproduction" / "suite-full-effort"
#: the published folders whose tables are rebuilt (the paper run, the extra seeds, the cvar grid and
#: the suite), each with the folders its report was made ``--with``
FOLDERS: dict[str, tuple[Path, tuple[Path, ...]]] = {
    "paper": (PUBLISHED, ()), "paper-extra": (EXTRA, ()), "cvar": (CVAR, ()),
    "suite": (SUITE, (SUITE_EFFORT,))}
#: the tables the test rebuilds and compares
TABLES = ("claims", "claims_overall", "final_table")


@pytest.fixture(scope="module", params=sorted(FOLDERS))
def published(request) -> tuple[Path, dict[str, pd.DataFrame]]:
    """A published folder and its report's tables rebuilt from its committed rows."""
    folder, also = FOLDERS[request.param]
    if not (folder / "_report").is_dir():
        pytest.fail(f"{folder / '_report'} is missing: the publication's report is part of the repository")
    frame, _, _ = read_frame(folder, also=also)
    return folder, report_tables(frame, results_study(folder))


def _round_trip(table: pd.DataFrame, tmp_path: Path, name: str) -> pd.DataFrame:
    """The table as its CSV reads back: what the committed file holds, typed the same way."""
    path = tmp_path / f"{name}.csv"
    table.to_csv(path, index=False)
    return pd.read_csv(path)


@pytest.mark.parametrize("name", TABLES)
def test_the_published_tables_are_what_the_committed_rows_give(published, tmp_path: Path, name: str) -> None:
    folder, rebuilt = published
    committed = pd.read_csv(folder / "_report" / f"{name}.csv")
    mine = _round_trip(rebuilt[name], tmp_path, name)
    assert list(mine.columns) == list(committed.columns), f"{name}.csv: columns moved"
    assert len(mine) == len(committed), f"{name}.csv: {len(mine)} rows rebuilt, {len(committed)} committed"
    for column in committed.columns:
        a, b = mine[column], committed[column]
        if pd.api.types.is_float_dtype(a) and pd.api.types.is_float_dtype(b):
            np.testing.assert_allclose(a.to_numpy(), b.to_numpy(), rtol=1e-9, atol=1e-12, equal_nan=True,
                                       err_msg=f"{name}.csv, column {column}")
        else:
            same = (a.astype(object) == b.astype(object)) | (a.isna() & b.isna())
            differ = (~same).to_numpy().nonzero()[0]
            assert differ.size == 0, (f"{name}.csv, column {column}, row {differ[0]}: rebuilt "
                                      f"{a.iloc[differ[0]]!r}, committed {b.iloc[differ[0]]!r}")


def test_the_page_shows_the_published_tables() -> None:
    """The reproduction page, the README's summary and the CVaR how-to's tables."""
    readme = ROOT / "docs" / "reproduction" / "README.md"
    assert page.main(["--results", str(PUBLISHED), "--page", str(readme), "--check"]) == 0, (
        "the page's generated blocks are stale: python -m studies.nguyen2021.page")
    text = (ROOT / "docs" / "how-to" / "cvar.md").read_text()
    for block in ("cvar-status", "cvar-cvar-regret", "cvar-cvar-seconds", "cvar-var-regret",
                  "cvar-var-seconds"):
        assert f"<!-- generated: {block} -->" in text, f"the CVaR how-to lost its generated block {block}"


def test_the_suite_page_shows_the_published_suite() -> None:
    """docs/suite.md's generated blocks (provenance, the choice table, the verdicts, the effort's
    effect) are what the published suite's rows and report give."""
    from studies.suite import page as suite_page

    assert suite_page.main(["--check"]) == 0, "the suite page is stale: python -m studies.suite.page"


#: A run's ledger of its driver starts (:data:`harness.stage.LEDGER_FIELDS`), beside its cells
RUNS_LEDGER = "_runs.csv"
STAGED = ROOT / "docs" / "reproduction" / "_pinned"


def resumes_not_covered(files: list[tuple[Path, dict]], ledger: Path) -> list[str]:
    """The cells resumed from a checkpoint (``provenance.resumed_at``) that a publication may not hold.

    A resume is bit for bit a whole run on the same kind of CPU (``tests/harness/test_checkpoint.py``, in
    a fresh process too), not across vendors (MKL's code paths differ:
    docs/reproduction/_pinned/README.md). A cell run by today's grid lists the hosts of its parts (its
    metadata's ``segments``, :func:`harness.cell.run_cell`); it is admitted when every part ran on the
    pin's vendor with pinned kernels. Older code recorded only the last part's host, so for its cells the
    run keeps a ledger of its driver starts, a row each with the CPU's vendor: such a cell is admitted
    when the ledger exists, every start in it ran on the pin's vendor, and the cell's own provenance names
    that vendor's CPU with pinned kernels.

    Args:
        files: the folder's cells and their metadata (:func:`harness.results.cell_files`).
        ledger: the run's ledger (CSV; may be missing).

    Returns:
        One line per refused cell: its path and why.
    """
    import csv

    from harness.kernels import MKL_CNR_VENDOR

    resumed = [(path, meta) for path, meta in files
               if (meta.get("provenance") or {}).get("resumed_at") is not None]
    refused = [f"{path}: resumed at {meta['provenance']['resumed_at']}; its parts ran on "
               f"{sorted({(part.get('vendor'), part.get('kernels')) for part in meta['segments']})}"
               for path, meta in resumed if meta.get("segments") and any(
                   (part.get("vendor"), part.get("kernels")) != (MKL_CNR_VENDOR, "pinned")
                   for part in meta["segments"])]
    unrecorded = [(path, meta["provenance"]) for path, meta in resumed if not meta.get("segments")]
    if not unrecorded:
        return refused
    if not ledger.is_file():
        return refused + [f"{path}: resumed at {p['resumed_at']}, and no ledger {ledger.name}"
                          for path, p in unrecorded]
    rows = list(csv.DictReader(ledger.open(newline="")))
    others = sorted({row["vendor"] for row in rows} - {MKL_CNR_VENDOR})
    if not rows or others:
        why = f"the ledger names {', '.join(others)}" if others else "the ledger is empty"
        return refused + [f"{path}: resumed at {p['resumed_at']}; {why}" for path, p in unrecorded]
    vendor_word = {"GenuineIntel": "Intel"}.get(MKL_CNR_VENDOR, MKL_CNR_VENDOR)
    return refused + [f"{path}: resumed at {p['resumed_at']} on {p.get('cpu')!r} with {p.get('kernels')} "
                      "kernels" for path, p in unrecorded
                      if vendor_word not in str(p.get("cpu")) or p.get("kernels") != "pinned"]


def test_a_resume_is_admitted_only_on_the_pins_vendor(tmp_path: Path) -> None:
    """The rule of :func:`resumes_not_covered`, on made-up metadata: it can refuse."""
    intel = "Intel(R) Xeon(R) Processor (family 6, model 207, stepping 2)"
    whole = (Path("a.parquet"), {"provenance": {"resumed_at": None, "cpu": "AMD EPYC", "kernels": "native"}})
    resumed = (Path("b.parquet"), {"provenance": {"resumed_at": 40, "cpu": intel, "kernels": "pinned"}})
    ledger = tmp_path / RUNS_LEDGER
    assert resumes_not_covered([whole], ledger) == []  # nothing resumed: no ledger needed
    assert "no ledger" in resumes_not_covered([whole, resumed], ledger)[0]
    header = "seen_utc,commit,cpu,vendor,evidence\n"
    ledger.write_text(header + f'2026-11-28 09:13,7c1c2f9,"{intel}",GenuineIntel,here\n')
    assert resumes_not_covered([whole, resumed], ledger) == []
    amd = (Path("c.parquet"), {"provenance": {"resumed_at": 3, "cpu": "AMD EPYC 7B13", "kernels": "pinned"}})
    assert resumes_not_covered([amd], ledger) == [
        "c.parquet: resumed at 3 on 'AMD EPYC 7B13' with pinned kernels"]
    ledger.write_text(ledger.read_text() + "2026-11-28 10:00,7c1c2f9,AMD EPYC 7B13,AuthenticAMD,there\n")
    assert resumes_not_covered([resumed], ledger) == [
        "b.parquet: resumed at 40; the ledger names AuthenticAMD"]
    # a cell that lists its parts' hosts needs no ledger, and is refused if one part ran elsewhere
    parts = [{"from": 0, "vendor": "GenuineIntel", "kernels": "pinned"},
             {"from": 41, "vendor": "GenuineIntel", "kernels": "pinned"}]
    recorded = (Path("d.parquet"), {"provenance": {"resumed_at": 40}, "segments": parts})
    assert resumes_not_covered([recorded], tmp_path / "none.csv") == []
    parts[0]["vendor"] = "AuthenticAMD"
    assert resumes_not_covered([recorded], tmp_path / "none.csv") == [
        "d.parquet: resumed at 40; its parts ran on [('AuthenticAMD', 'pinned'), ('GenuineIntel', 'pinned')]"]
    parts[0]["vendor"], parts[1]["kernels"] = "GenuineIntel", "native"
    assert resumes_not_covered([recorded], tmp_path / "none.csv") == [
        "d.parquet: resumed at 40; its parts ran on [('GenuineIntel', 'native'), ('GenuineIntel', 'pinned')]"]


def test_the_staged_runs_resumed_cells_ran_on_the_pins_vendor() -> None:
    """The suite's run in progress resumes across sittings: its staged cells are admitted by its ledger
    (``_pinned/suite-runs.csv``, which moves beside the cells as ``_runs.csv`` at republication)."""
    from harness.results import cell_files
    from harness.stage import LEDGER_FIELDS

    files, refused = cell_files(STAGED / "suite")
    assert not refused, f"unreadable staged cells: {refused[:3]}"
    assert (STAGED / "suite-runs.csv").read_text().splitlines()[0] == ",".join(LEDGER_FIELDS)
    assert resumes_not_covered(files, STAGED / "suite-runs.csv") == []


@pytest.mark.parametrize("folder", [SUITE, SUITE_EFFORT], ids=["suite", "suite-full-effort"])
def test_the_suite_is_its_grid_whole_resumed_only_on_the_pins_vendor(folder: Path) -> None:
    """Every cell of the run's grid (its manifest, ``_grid.json``) is published, each run from
    iteration 0 or resumed only on the pin's vendor (:func:`resumes_not_covered`); the manifest is the
    named grid of today's code, or a run of that grid is staged as in progress
    (docs/reproduction/_pinned/README.md)."""
    from analysis.report import read_grid_record
    from harness.grid import named_grids
    from harness.results import cell_files, spec_from_dict, spec_hash

    files, refused = cell_files(folder)
    assert not refused, f"unreadable published cells: {refused[:3]}"
    published = {p.stem.rsplit("-", 1)[-1] for p, _ in files}
    record = read_grid_record(folder)
    manifest = {spec_hash(spec_from_dict(c)) for c in record["cells"]}
    assert published == manifest
    grid = named_grids().get(record["grid"])
    staged = (ROOT / "docs" / "reproduction" / "_pinned" / "README.md").read_text()
    assert (grid is not None and {spec_hash(c) for c in grid().cells} == manifest) or (
        f"`{record['grid']}`" in staged and "is in progress" in staged), (
        f"{folder.name}: grid {record['grid']!r} is not what was published, and no run of it is staged")
    refused_resumes = resumes_not_covered(files, folder / RUNS_LEDGER)
    assert not refused_resumes, f"resumed cells without a pinned run behind them: {refused_resumes[:3]}"
    # one environment, the pins of constraints.txt, but for pip before the run's venv upgraded it
    # (docs/suite.md says so): the digest of the pins with pip==23.2.1 in place of pip==26.3
    from harness.store import environment_digest

    pins = [line.strip() for line in (SUITE / "constraints.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")]
    allowed = {environment_digest(pins),
               environment_digest([("pip==23.2.1" if pin.startswith("pip==") else pin) for pin in pins])}
    seen = {meta["provenance"]["environment"] for _, meta in files}
    assert seen <= allowed, f"cells of another environment: {sorted(seen - allowed)}"


def test_the_publication_is_every_cell_of_its_grid_or_says_it_is_not() -> None:
    """The page says 'in progress' exactly while cells of the grid are missing."""
    from harness.results import cell_files

    files, refused = cell_files(PUBLISHED)
    assert not refused, f"unreadable published cells: {refused[:3]}"
    n_files = len(files)
    text = (ROOT / "docs" / "reproduction" / "README.md").read_text()
    assert n_files <= 510
    assert ("the run is in progress" in text) == (n_files < 510)


def _whole_and_sharing_the_paper_runs_cells(grid: str, folder: Path) -> int:
    """Asserts that ``folder`` holds every cell of ``grid``, and that its cells of the paper grid are
    the published paper run's, row for row (copied, not rerun); how many it shares."""
    from harness.grid import named_grids
    from harness.results import cell_files, read_cell, spec_hash

    grids = named_grids()
    cells, paper = grids[grid]().cells, set(grids["paper"]().cells)
    files, refused = cell_files(folder)
    assert not refused and len(files) == len(cells)
    shared = [c for c in cells if c in paper]
    # the folders may be packed (harness.packed): each cell by its spec hash, read as the harness reads it
    ours_by_hash = {p.stem.rsplit("-", 1)[-1]: p for p, _ in files}
    paper_cells = {p.stem.rsplit("-", 1)[-1]: p for p, _ in cell_files(PUBLISHED)[0]}
    for spec in shared:
        ours, theirs = read_cell(ours_by_hash[spec_hash(spec)]), read_cell(paper_cells[spec_hash(spec)])
        assert ours[1].equals(theirs[1]) and ours[0] == theirs[0], spec
    return len(shared)


def test_the_extra_seeds_are_their_grid_whole_and_share_the_paper_runs_cells() -> None:
    """paper-extra holds every cell of its grid, and its cells of the paper grid (seeds 0-9) are the
    published paper run's."""
    from harness.grid import named_grids

    n_cells = len(named_grids()["paper-extra"]().cells)
    assert _whole_and_sharing_the_paper_runs_cells("paper-extra", EXTRA) == n_cells // 3  # seeds 0-9 of 0-29


def test_the_cvar_grid_is_whole_and_shares_the_paper_runs_var_cells() -> None:
    """The cvar grid's VaR cells of V-UCB Prob and random search on its five problems (10 seeds each)
    are the published paper run's."""
    assert _whole_and_sharing_the_paper_runs_cells("cvar", CVAR) == 100


#: What all of ``docs/reproduction/`` may hold, published runs, reports and staged runs together: a clone
#: of the repository carries it whole.
REPRODUCTION_CAP_MIB = 30.0


def test_the_reproduction_folder_stays_under_its_cap() -> None:
    """Every file under ``docs/reproduction/`` (in a fresh clone: the committed ones) adds up to at most
    :data:`REPRODUCTION_CAP_MIB`; the message names the largest folders, where a republication must save."""
    folder = ROOT / "docs" / "reproduction"
    sizes: dict[str, int] = {}
    for path in folder.rglob("*"):
        if path.is_file():
            part = path.relative_to(folder).parts
            key = "/".join(part[:2]) if len(part) > 2 else part[0]
            sizes[key] = sizes.get(key, 0) + path.stat().st_size
    total = sum(sizes.values()) / 2**20
    largest = ", ".join(f"{k} {v / 2**20:.1f}" for k, v in sorted(sizes.items(), key=lambda kv: -kv[1])[:5])
    assert total <= REPRODUCTION_CAP_MIB, f"docs/reproduction/ holds {total:.1f} MiB; the largest: {largest}"
