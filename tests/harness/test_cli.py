"""The single-cell command line: one Parquet file on success, one-line errors and exit 2 otherwise."""

import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.run import main
from harness.store import ROW_SCHEMA, read_metadata


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
