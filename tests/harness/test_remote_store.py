"""Results stores given as URIs: ``file://`` and S3, the latter against an S3-compatible server
started here on loopback (moto's server, from PyPI). A grid runs into the store, resumes there,
and the status and reading functions see what a local folder would show."""

import logging
import os
from pathlib import Path

import pytest

from harness.cell import CellSpec
from harness.frames import read_results
from harness.results import cell_path, location, result_files
from harness.run import main
from harness.status import main as status_main

#: processes of their own (Ray, drivers, servers): one xdist group, one test at a time (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("processes")

ray = pytest.importorskip("ray")
GRID = """seeds = 2
iterations = 1
[[cells]]
problems = ["branin-1-1-discrete", "goldstein-1-1-discrete"]
algorithms = ["random"]
"""
SPECS = [CellSpec.make(p, "random", s, 1) for p in ("branin-1-1-discrete", "goldstein-1-1-discrete")
         for s in (0, 1)]


@pytest.fixture(scope="module")
def s3_bucket():
    moto_server = pytest.importorskip("moto.server")
    pytest.importorskip("s3fs")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    saved = dict(os.environ)
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                      AWS_DEFAULT_REGION="us-east-1", AWS_ENDPOINT_URL=f"http://{host}:{port}")
    import boto3

    boto3.client("s3").create_bucket(Bucket="varbo-results")
    yield "s3://varbo-results"
    os.environ.clear()
    os.environ.update(saved)
    server.stop()


@pytest.fixture(scope="module", autouse=True)
def module_ray(s3_bucket: str):
    """One local Ray for the module's grids (the command line's start of its own is tested in
    test_ray_faults.py and test_grid_process.py; each start here cost 10-15 s), started after the S3
    server so that its workers inherit the endpoint and the keys."""
    ray.shutdown()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             logging_level="ERROR")
    yield
    ray.shutdown()


def run_grid(tmp_path: Path, out: str, capsys: pytest.CaptureFixture, *extra: str) -> tuple[int, str]:
    grid = tmp_path / "g.toml"
    grid.write_text(GRID)
    code = main(["--grid", str(grid), "--out", out, "--num-cpus", "2", "--no-progress", *extra])
    return code, capsys.readouterr().out


def test_a_file_uri_is_a_local_folder(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    code, text = run_grid(tmp_path, f"file://{tmp_path}/out", capsys)
    assert code == 0, text
    assert sorted(result_files(tmp_path / "out")) == sorted(cell_path(tmp_path / "out", s) for s in SPECS)
    code, text = run_grid(tmp_path, f"file://{tmp_path}/out", capsys, "--dry-run")
    assert "4 done, 0 to run" in text


def test_a_grid_runs_resumes_and_reads_back_on_s3(s3_bucket: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture) -> None:
    out = f"{s3_bucket}/run"
    code, text = run_grid(tmp_path, out, capsys)
    assert code == 0, text
    files = result_files(out)
    assert sorted(str(p) for p in files) == sorted(str(cell_path(out, s)) for s in SPECS)
    assert all(str(p).startswith("s3://varbo-results/run/") for p in files)
    assert not [p for p in location(out).rglob("*") if p.name.startswith(".")]  # no temporaries
    frame = read_results(out)
    assert len(frame) == 2 * len(SPECS) and set(frame["problem"]) == {s.problem for s in SPECS}
    # resume: exactly the deleted cell runs again, the others are left as they were
    lost = cell_path(out, SPECS[1])
    lost.unlink()
    kept = {str(p): p.read_bytes() for p in result_files(out)}
    code, text = run_grid(tmp_path, out, capsys)
    assert code == 0 and "3 done, 1 to run" in text, text
    assert {str(p): p.read_bytes() for p in result_files(out) if str(p) in kept} == kept
    assert lost.exists()
    assert status_main([out]) == 0
    assert "total: 4 done, 0 missing, 0 failed" in capsys.readouterr().out
    assert not (location(out) / "_running.lock").exists()


def test_an_unwritable_store_is_one_line_exit_2(s3_bucket: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture) -> None:
    code = main(["--grid", "smoke", "--out", "s3://no-such-bucket/run", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not writable" in err, err
