"""A flaky object store loses nothing: a grid runs into S3 (moto's server on loopback) through a
proxy that injects faults into a fifth of the requests (``benchmarks/flaky_store.py``: HTTP 500,
503 ``SlowDown``, a connection reset, a request that hangs past the client's read timeout). The
client's own retries (botocore's standard mode, :mod:`harness.remote`) absorb them: exit 0, every
cell uploaded once and equal to an undisturbed run. A store that stays down beyond the retry budget
costs no finished cell: it is kept on this machine and the next run uploads it.

Each case runs two cells of one iteration (random search on two problems): the driver's 60-odd
requests to the store, not the cells' compute, are what is tested, and each fault costs its retry's
backoff (half a second on average), a stall also the read timeout, here 0.5 s instead of the
default's 20 s. A case takes 5-20 s (the stall's the longest), after the module's Ray start."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness import remote, spill
from harness.cell import CellSpec
from harness.results import cell_path, failure_files, location, read_cell, result_files
from harness.run import main
from tests.harness.test_remote_store import module_ray, s3_bucket  # noqa: F401 (the module's fixtures)


def _flaky_store():
    """``benchmarks/flaky_store.py`` (the chaos run's proxy too; ``benchmarks`` is no package)."""
    import importlib.util
    import sys

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "flaky_store.py"
    spec = importlib.util.spec_from_file_location("flaky_store", path)
    if "flaky_store" not in sys.modules:
        sys.modules["flaky_store"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules["flaky_store"])
    return sys.modules["flaky_store"]


FAULTS, FlakyProxy = _flaky_store().FAULTS, _flaky_store().FlakyProxy

#: processes of their own (Ray, drivers, servers): one xdist group, one test at a time (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("processes")

GRID = """seeds = 1
iterations = 1
[[cells]]
problems = ["branin-1-1-discrete", "goldstein-1-1-discrete"]
algorithms = ["random"]
"""
SPECS = [CellSpec.make(p, "random", 0, 1) for p in ("branin-1-1-discrete", "goldstein-1-1-discrete")]
#: The columns compared with the undisturbed run.
COLUMNS = ("x", "z", "y", "x_rec", "regret")
#: The share of requests that meet a fault, the client's read timeout and how long a stall holds.
RATE, READ_TIMEOUT_S, STALL_S = 0.2, 0.5, 1.0
#: The seed of the proxy's draws: 11 faults in the first 59 of them (seed 0: 6).
SEED = 1


def run_grid(tmp_path: Path, out: str, capsys: pytest.CaptureFixture) -> tuple[int, str]:
    grid = tmp_path / "g.toml"
    grid.write_text(GRID)
    code = main(["--grid", str(grid), "--out", out, "--num-cpus", "2", "--no-progress"])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def rows(path) -> list[dict]:
    return read_cell(path)[1].select(list(COLUMNS)).to_pylist()


def key(out: str, spec: CellSpec) -> str:
    """The cell's object as the proxy sees it: ``/bucket/prefix/...``."""
    return "/" + str(cell_path(out, spec)).removeprefix("s3://")


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The cells run undisturbed into a local folder: cell -> its rows (:data:`COLUMNS`)."""
    folder = tmp_path_factory.mktemp("reference")
    (folder / "g.toml").write_text(GRID)
    code = main(["--grid", str(folder / "g.toml"), "--out", str(folder / "out"), "--num-cpus", "2",
                 "--no-progress"])
    assert code == 0
    return {spec: rows(cell_path(folder / "out", spec)) for spec in SPECS}


@pytest.fixture
def proxy(s3_bucket: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):  # noqa: F811
    """A :class:`FlakyProxy` in front of the module's S3 server, the client pointed at it (a read
    timeout of :data:`READ_TIMEOUT_S`) and a keep of its own."""
    import s3fs

    flaky = FlakyProxy(os.environ["AWS_ENDPOINT_URL"].removeprefix("http://"), seed=SEED, stall_s=STALL_S)
    monkeypatch.setenv("AWS_ENDPOINT_URL", flaky.start())
    monkeypatch.setenv(remote.READ_VARIABLE, str(READ_TIMEOUT_S))
    monkeypatch.setenv(remote.CONNECT_VARIABLE, "2")
    monkeypatch.setenv(spill.SPILL_VARIABLE, str(tmp_path / "kept"))
    # fsspec caches clients by their options, not by the endpoint variable: a cached one would
    # bypass the proxy
    s3fs.S3FileSystem.clear_instance_cache()
    yield flaky
    flaky.stop()
    s3fs.S3FileSystem.clear_instance_cache()


def check_cells(out: str, reference: dict, proxy: FlakyProxy) -> None:
    """Every cell of the grid in ``out``, uploaded once (an upload that the server applied but whose
    answer never came, a stall, is sent again with the same bytes: an idempotent overwrite), its rows
    the undisturbed run's, and nothing else: no failure record, no lock."""
    proxy.kinds = ()  # read back undisturbed
    assert sorted(map(str, result_files(out))) == sorted(str(cell_path(out, s)) for s in SPECS)
    assert failure_files(out) == [] and not (location(out) / "_running.lock").exists()
    for spec in SPECS:
        uploads = proxy.uploads(key(out, spec))
        assert [u.fate for u in uploads].count("ok") == 1, uploads
        assert len({u.digest for u in uploads}) == 1, f"{spec}: uploads of different bytes"
        assert rows(cell_path(out, spec)) == reference[spec], spec


@pytest.mark.parametrize("kind", FAULTS)
def test_transient_store_errors_are_retried_by_the_client_and_lose_nothing(
        kind: str, s3_bucket: str, proxy: FlakyProxy, reference: dict, tmp_path: Path,  # noqa: F811
        capsys: pytest.CaptureFixture) -> None:
    out = f"{s3_bucket}/flaky-{kind}"
    proxy.kinds, proxy.rate = (kind,), RATE
    code, text = run_grid(tmp_path, out, capsys)
    faults = proxy.faults()
    assert code == 0, text
    assert len(faults) >= 5 and {f.fate for f in faults} == {kind}, f"{len(faults)} faults injected"
    check_cells(out, reference, proxy)


def test_a_store_down_beyond_the_retry_budget_keeps_the_cells_for_the_next_run(
        s3_bucket: str, proxy: FlakyProxy, reference: dict, tmp_path: Path,  # noqa: F811
        capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """From the first upload of a cell on, the store answers every request 503 (it is down): the
    client gives up after its attempts, 2 here, set as a user sets them (``AWS_MAX_ATTEMPTS``,
    which botocore reads itself); the finished cells are kept on this machine, the run exits 1; the
    next run, the store back, uploads them before anything else and runs nothing."""
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")
    out = f"{s3_bucket}/down"
    cells = {key(out, spec) for spec in SPECS}
    proxy.outage = lambda request: request.method == "PUT" and request.key in cells
    code, text = run_grid(tmp_path, out, capsys)
    assert code == 1 and text.count("which the same command writes into the results folder") == 2, text
    assert f"{len(SPECS)} finished cell(s) that {out} refused are kept on this machine" in text, text
    assert "the same command writes them first, without computing them again" in text
    assert len(list(spill.spill_folder(out).rglob("*.parquet"))) == len(SPECS), text
    # each attempt of the first cell's upload, as botocore counts them: 2
    assert len([r for r in proxy.requests if r.method == "PUT" and r.key == key(out, SPECS[0])]) == 2
    proxy.down, proxy.outage = False, None
    code, text = run_grid(tmp_path, out, capsys)
    assert code == 0 and f"wrote {len(SPECS)} finished cell(s)" in text and "0 to run" in text, text
    assert not list(spill.spill_folder(out).rglob("*.parquet"))
    check_cells(out, reference, proxy)


def test_the_client_defaults_yield_to_what_the_user_set(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_RETRY_MODE", "AWS_MAX_ATTEMPTS", remote.READ_VARIABLE, remote.CONNECT_VARIABLE):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    config = remote.storage_options("s3://bucket/run")["config_kwargs"]
    assert config == {"connect_timeout": remote.CONNECT_TIMEOUT_S, "read_timeout": remote.READ_TIMEOUT_S,
                      "retries": {"mode": "standard", "total_max_attempts": remote.MAX_ATTEMPTS}}
    # what botocore reads itself is left to it; the timeouts are this project's variables
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "4")
    monkeypatch.setenv(remote.READ_VARIABLE, "60")
    config = remote.storage_options("s3://bucket/run")["config_kwargs"]
    assert config["retries"] == {"mode": "standard"} and config["read_timeout"] == 60.0
    monkeypatch.setenv("AWS_RETRY_MODE", "adaptive")
    assert "retries" not in remote.storage_options("s3://bucket/run")["config_kwargs"]
    assert remote.storage_options("gs://bucket/run") == {} and remote.storage_options("/tmp/x") == {}
    assert location("s3://bucket/run").storage_options["config_kwargs"]["read_timeout"] == 60.0
    monkeypatch.setenv(remote.READ_VARIABLE, "soon")
    with pytest.raises(ValueError, match=remote.READ_VARIABLE):
        location("s3://bucket/run")
    # the clients of S3 and GCS retried every request already: the grid writes a cell there once
    assert spill.write_attempts("s3://bucket/run") == 1 and spill.write_attempts("gs://b/r") == 1
    assert spill.write_attempts(Path("/tmp/run")) == spill.WRITE_ATTEMPTS
