"""The single-cell command line: one Parquet file on success, one-line errors and exit 2 otherwise."""

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.results import read_metadata
from harness.run import main
from harness.schema import ROW_SCHEMA


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.run", *args], capture_output=True,
                          text=True)


def test_one_cell_writes_one_parquet_file_with_metadata(tmp_path: Path) -> None:
    out = tmp_path / "results"
    done = run_cli("--problem", "branin-1-1-discrete", "--algorithm", "vucb-prob", "--seed", "0",
                   "--iterations", "2", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "final regret" in done.stdout
    files = list(out.rglob("*.parquet"))
    assert len(files) == 1
    assert files[0].parent == out / "branin-1-1-discrete" / "vucb-prob"
    assert not [p for p in out.rglob("*") if p.name.startswith(".")]
    table = pq.read_table(files[0])
    assert table.schema.remove_metadata() == ROW_SCHEMA
    assert table.column("iteration").to_pylist() == [0, 1, 2]
    meta = read_metadata(files[0])
    assert meta["spec"]["problem"] == "branin-1-1-discrete" and meta["spec"]["iterations"] == 2
    assert meta["optimum"]["value"] == pytest.approx(0.7324785856173648)
    assert set(meta["provenance"]["packages"]) >= {"torch", "botorch", "gpytorch"}
    assert "git_commit" in meta["provenance"]


BAD = [
    (["--problem", "nope", "--algorithm", "vucb-prob"], "unknown problem 'nope'"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "nope"], "unknown algorithm 'nope'"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "vucb-prob", "--alpha", "1.0"], "alpha"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "vucb-prob", "--alpha", "0"], "alpha"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "vucb-prob", "--alpha", "nan"], "alpha"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "vucb-prob", "--seed", "-1"], "seed"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "vucb-prob", "--iterations", "-3"],
     "iterations"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "vucb-prob", "--option", "nope=1"],
     "nope"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "vucb-prob", "--option", "beta=-1"],
     "beta"),
    (["--algorithm", "vucb-prob"], "--problem"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "vucb-unif", "--option", "n_raw=-5"],
     "n_raw"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "stableopt", "--option", "maxiter=abc"],
     "maxiter"),
    (["--problem", "branin-1-1-discrete", "--algorithm", "rhokg-apx", "--option",
      "num_fantasies=0"], "num_fantasies"),
]


@pytest.mark.parametrize("args, needle", BAD)
def test_bad_input_is_one_line_and_exit_2(args: list[str], needle: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "out"
    code = main([*args, "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and needle in err and "Traceback" not in err
    assert not out.exists()


def test_unwritable_or_file_out_is_rejected_without_writing(tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("keep me")
    for out in (a_file, Path("/proc/no-such-dir")):
        done = run_cli("--problem", "branin-1-1-discrete", "--algorithm", "random",
                       "--out", str(out))
        assert done.returncode == 2
        assert len(done.stderr.strip().splitlines()) == 1 and "--out" in done.stderr
    assert a_file.read_text() == "keep me"


def test_gp_profile_on_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "results"
    assert main(["--problem", "branin-1-1-discrete", "--algorithm", "random", "--iterations", "1",
                 "--gp", "authors", "--out", str(out)]) == 0
    (path,) = out.rglob("*.parquet")
    assert read_metadata(path)["spec"]["gp"] == "authors"
    table = pq.read_table(path)
    assert table.column("gp_noise").null_count == 0
    done = run_cli("--problem", "branin-1-1-discrete", "--algorithm", "random", "--gp", "nope",
                   "--out", str(tmp_path / "bad"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "unknown GP profile 'nope'" in done.stderr
    assert not (tmp_path / "bad").exists() or not list((tmp_path / "bad").rglob("*.parquet"))


def test_files_of_the_schema_before_the_gp_columns_still_read(tmp_path: Path) -> None:
    # a file as the store wrote it before hyperparameters were stored: accepted, gp_* null
    import pyarrow as pa

    from harness.cell import CellSpec, run_cell
    from harness.frames import read_results
    from harness.results import cell_path, check_cell_file
    from harness.schema import ROW_SCHEMA_V1
    from harness.store import to_table

    spec = CellSpec.make("branin-1-1-discrete", "random", 0, 1)
    result = run_cell(spec)
    table = to_table(result)
    meta = json.loads(table.schema.metadata[b"varbo"])
    del meta["rows"], meta["checksum"]  # recorded only since the gp_* columns exist
    old = table.select(ROW_SCHEMA_V1.names).replace_schema_metadata({"varbo": json.dumps(meta)})
    path = cell_path(tmp_path, spec)
    path.parent.mkdir(parents=True)
    pq.write_table(old, path)
    assert old.schema.remove_metadata() == ROW_SCHEMA_V1
    assert check_cell_file(path) is None
    frame = read_results(tmp_path)
    assert len(frame) == 2 and frame["gp_noise"].isna().all() and (frame["gp"] == "paper").all()
    assert frame["x_rec"].tolist()[1] == result.rows[1]["x_rec"]
    # a file with a column of neither schema is still refused
    pq.write_table(old.append_column("extra", pa.array([1, 2])), path)
    assert "other columns" in check_cell_file(path)


def test_files_of_the_schema_before_the_info_column_still_read(tmp_path: Path) -> None:
    # a file as the store wrote it before the proposal's info was stored whole: info null
    from harness.cell import CellSpec, run_cell
    from harness.frames import read_results
    from harness.results import cell_path, check_cell_file, table_checksum
    from harness.schema import ROW_SCHEMA_V2
    from harness.store import to_table

    spec = CellSpec.make("branin-1-1-discrete", "vucb-prob", 0, 1)
    result = run_cell(spec)
    table = to_table(result)
    meta = json.loads(table.schema.metadata[b"varbo"])
    old = table.select(ROW_SCHEMA_V2.names)
    meta["checksum"] = table_checksum(old)
    old = old.replace_schema_metadata({"varbo": json.dumps(meta)})
    path = cell_path(tmp_path, spec)
    path.parent.mkdir(parents=True)
    pq.write_table(old, path)
    assert check_cell_file(path) is None
    frame = read_results(tmp_path)
    assert len(frame) == 2 and frame["info"].isna().all() and frame["gp_noise"].notna().all()
    assert json.loads(table.column("info")[1].as_py())["beta"] == frame["beta"].tolist()[1]
