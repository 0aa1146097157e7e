"""Packed folders (:mod:`harness.packed`, ``python -m harness.pack``): every reader reads a packed
folder as the folder of cell files it was packed from, and unpacking gives those files back."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.cell import run_cell
from harness.frames import read_results
from harness.pack import main as pack_main
from harness.packed import DIGESTS, PACK_KEY, PACK_SUFFIX, PackedCell, file_digest
from harness.results import cell_files, cell_path, check_cell_file, invalid_files, read_cell, table_checksum
from harness.schema import ROW_SCHEMA, ROW_SCHEMA_V4
from harness.spec import CellSpec
from harness.store import write_cell, write_manifest
from harness.verify import main as verify_main

#: one worker for the module (xdist ``loadgroup``): the packed folder of the module fixture (5-6 s)
#: is computed once, not once per worker that happens to take one of its tests
pytestmark = pytest.mark.xdist_group("pack")

ROOT = Path(__file__).resolve().parents[2]
SPECS = [CellSpec.make(p, a, s, 3) for p in ("branin-1-1-discrete", "goldstein-1-1-discrete")
         for a in ("random", "vucb-unif") for s in (0, 1)]


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished folder of eight cells, one of them in the older schema (without ``mean_rec``)."""
    out = tmp_path_factory.mktemp("unpacked") / "results"
    for spec in SPECS:
        write_cell(out, spec, run_cell(spec))
    write_manifest(out, "test", SPECS)
    path = cell_path(out, SPECS[0])  # rewritten as a file of the schema before mean_rec
    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[b"varbo"])
    older = table.select(ROW_SCHEMA_V4.names).replace_schema_metadata(None)
    meta["checksum"] = table_checksum(older)
    pq.write_table(older.replace_schema_metadata({"varbo": json.dumps(meta)}), path, compression="zstd")
    assert check_cell_file(path) is None
    return out


@pytest.fixture()
def packed(unpacked: Path, tmp_path: Path) -> Path:
    out = tmp_path / "packed"
    shutil.copytree(unpacked, out)
    assert pack_main([str(out)]) == 0
    return out


def files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_a_pack_holds_every_cell_and_nothing_else_changes(unpacked: Path, packed: Path) -> None:
    assert files(packed) == [DIGESTS, "_grid.json", *sorted(f"{p}/{a}{PACK_SUFFIX}" for p in (
        "branin-1-1-discrete", "goldstein-1-1-discrete") for a in ("random", "vucb-unif"))]
    before, after = cell_files(unpacked), cell_files(packed)
    assert not before[1] and not after[1]
    assert [(str(p.relative_to(unpacked)), m) for p, m in before[0]] == [
        (str(p.relative_to(packed)), m) for p, m in after[0]]
    assert all(isinstance(p, PackedCell) and p.is_file() for p, _ in after[0])


def test_a_pack_holds_its_metadata_once_and_reads_back_whole(packed: Path) -> None:
    """pyarrow's Arrow-schema copy in the footer would hold the cells' metadata a second time (a
    third of a published pack's bytes): a pack leaves it out, and still reads back with the
    metadata and with every column's type."""
    for pack in sorted(packed.rglob(f"*{PACK_SUFFIX}")):
        footer = pq.read_metadata(pack).metadata
        assert set(footer) == {PACK_KEY}
        table = pq.read_table(pack)
        assert len(json.loads(table.schema.metadata[PACK_KEY])["cells"]) == 2
        assert table.schema.remove_metadata().equals(pa.schema(
            [f.with_type(pa.list_(pa.field("element", pa.float64()))) if pa.types.is_list(f.type) else f
             for f in ROW_SCHEMA]))


def test_every_reader_reads_a_packed_folder_as_its_cell_files(unpacked: Path, packed: Path) -> None:
    pd.testing.assert_frame_equal(read_results(unpacked), read_results(packed))
    older = read_results(packed).query("problem == 'branin-1-1-discrete' and algorithm == 'random' "
                                       "and seed == 0")
    assert older["mean_rec"].isna().all()  # the column that cell's file did not have
    for (a, _), (b, _) in zip(cell_files(unpacked)[0], cell_files(packed)[0], strict=True):
        assert read_cell(a)[1].equals(read_cell(b)[1])
    status = subprocess.run([sys.executable, "-m", "harness.status", str(packed)], capture_output=True,
                            text=True, cwd=ROOT)
    assert "total: 8 done, 0 missing, 0 failed" in status.stdout, status.stdout + status.stderr


def test_verify_reruns_a_packed_cell(packed: Path, capsys: pytest.CaptureFixture) -> None:
    assert verify_main([str(packed), "--cell", "goldstein-1-1-discrete/vucb-unif/seed1"]) == 0
    assert "summary: all 1 cells identical" in capsys.readouterr().out


def test_unpacking_gives_the_cell_files_back(unpacked: Path, packed: Path) -> None:
    assert pack_main([str(packed), "--unpack"]) == 0
    assert files(packed) == files(unpacked)
    for path in unpacked.rglob("*.parquet"):
        twin = packed / path.relative_to(unpacked)
        assert pq.read_schema(twin).names == pq.read_schema(path).names
        assert pq.read_schema(twin).metadata == pq.read_schema(path).metadata
        assert pq.read_table(twin).equals(pq.read_table(path))


def test_a_packed_folder_is_read_only_and_a_running_one_is_not_packed(packed: Path, unpacked: Path,
                                                                     tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "harness.run", "--problem", "branin-1-1-discrete",
                           "--algorithm", "random", "--iterations", "1", "--out", str(packed)],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "packed folder" in done.stderr
    assert pack_main([str(packed)]) == 2  # packed already
    running = tmp_path / "running"
    shutil.copytree(unpacked, running)
    (running / "_progress.json").write_text("{}")
    assert pack_main([str(running)]) == 2
    assert len(list(running.rglob("*.parquet"))) == len(SPECS)  # nothing changed


def test_a_damaged_pack_is_named_not_read(packed: Path) -> None:
    pack = next(packed.rglob(f"*{PACK_SUFFIX}"))
    pack.write_bytes(pack.read_bytes()[:-100])
    (bad,) = invalid_files(packed)
    assert bad[0] == pack and "not a readable pack" in bad[1]
    assert len(cell_files(packed)[0]) == len(SPECS) - 2


def test_a_pack_with_a_changed_value_fails_its_cells_checksum(packed: Path) -> None:
    """The cells' own checksums, under the packs' digests (removed here: a folder packed before
    digests were recorded is checked by its cells' checksums alone)."""
    (packed / DIGESTS).unlink()
    pack = next(packed.rglob(f"*{PACK_SUFFIX}"))
    table = pq.read_table(pack)
    y = table.column("y").to_pylist()
    y[1] = (y[1] or 0.0) + 1.0
    table = table.set_column(table.schema.get_field_index("y"), "y", pa.array(y, pa.float64()))
    pq.write_table(table, pack)
    reasons = [reason for path, reason in invalid_files(packed) if isinstance(path, PackedCell)]
    assert reasons == ["damaged data (its values do not match its checksum)"]


def _flip_a_data_byte(pack: Path) -> None:
    """Flip one bit inside the first column chunk's pages (not the footer): what a disk, a copy or a
    transfer does to a file without a word. The page decodes (zstd without its optional checksum)
    or not; either way the file's bytes are not those written."""
    chunk = pq.ParquetFile(pack).metadata.row_group(0).column(0)
    data = bytearray(pack.read_bytes())
    data[chunk.data_page_offset + chunk.total_compressed_size // 2] ^= 0x10
    pack.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["flipped bit", "truncated"])
def test_a_damaged_pack_is_refused_by_name_by_every_reader(damage: str, packed: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture) -> None:
    """Reading, ``harness.status``, the report and ``harness.verify`` each name the damaged pack and
    refuse the folder (an exception or a non-zero exit), instead of reading the others' rows as
    the whole: a flipped bit in a data page, and a pack cut short."""
    from analysis.report import main as report_main
    from harness.results import DamagedFileError
    from harness.status import main as status_main

    pack = sorted(packed.rglob(f"*{PACK_SUFFIX}"))[0]
    if damage == "truncated":
        pack.write_bytes(pack.read_bytes()[: pack.stat().st_size // 2])
    else:
        _flip_a_data_byte(pack)
    with pytest.raises(DamagedFileError, match=str(pack)):
        read_results(packed)
    assert status_main([str(packed)]) == 1
    damaged_lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("DAMAGED")]
    assert damaged_lines and all(str(pack) in line and "refused" in line for line in damaged_lines)
    assert report_main([str(packed), "--out", str(tmp_path / "report")]) == 2
    assert verify_main([str(packed), "--sample", "1"]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 2 and all(str(pack) in line for line in errors), errors


def test_digests_are_recorded_when_packing_and_for_a_folder_packed_before(packed: Path) -> None:
    """Packing records each pack's SHA-256 (computed again here with hashlib); ``--digests`` records
    the same for a folder without them, changing no pack's bytes; unpacking removes the record."""
    import hashlib

    recorded = json.loads((packed / DIGESTS).read_text())["files"]
    found = sorted(packed.rglob(f"*{PACK_SUFFIX}"))
    assert recorded == {str(p.relative_to(packed)): hashlib.sha256(p.read_bytes()).hexdigest() for p in found}
    before = {p: file_digest(p) for p in found}
    (packed / DIGESTS).unlink()
    assert pack_main([str(packed), "--digests"]) == 0
    assert json.loads((packed / DIGESTS).read_text())["files"] == recorded
    assert {p: file_digest(p) for p in found} == before
    assert pack_main([str(packed), "--unpack"]) == 0 and not (packed / DIGESTS).exists()
