"""The environments of :mod:`harness.kernels`: what they set, and that the pin makes two emulated
hosts (this one as it is, and this one restricted as a CPU without AVX-512) give the same rows of a
V-UCB cell, whose GP algebra (MKL), kernels (torch) and sorting (numpy) all take part."""

import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from harness.kernels import PINNED, cpu_model, older_host_environment, pinned_environment

ROOT = Path(__file__).resolve().parents[2]
COLUMNS = ["x", "z", "y", "x_rec", "regret"]


def test_the_environments_set_what_they_say() -> None:
    base = {"PATH": "/usr/bin", "MKL_CBWR": "AUTO"}
    pinned = pinned_environment(base)
    assert pinned["PATH"] == "/usr/bin" and all(pinned[k] == v for k, v in PINNED.items())
    older = older_host_environment(base)
    assert older["MKL_ENABLE_INSTRUCTIONS"] == "AVX2" and older["ATEN_CPU_CAPABILITY"] == "avx2"
    assert older["MKL_CBWR"] == "AUTO"  # restricted, not pinned
    from numpy._core._multiarray_umath import __cpu_dispatch__

    wide = {t for t in __cpu_dispatch__ if t == "X86_V4" or t.startswith("AVX512")}
    assert set(pinned.get("NPY_DISABLE_CPU_FEATURES", "").split()) == wide
    assert cpu_model()


def rows(env: dict[str, str], out: Path) -> list[dict]:
    subprocess.run([sys.executable, "-m", "harness.run", "--problem", "goldstein-1-1-discrete",
                    "--algorithm", "vucb-prob", "--iterations", "12", "--out", str(out)],
                   cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    (path,) = out.rglob("*.parquet")
    return pq.read_table(path, columns=COLUMNS).to_pylist()


def test_pinned_rows_are_the_same_on_two_emulated_hosts(tmp_path: Path) -> None:
    """Unpinned, the same two runs differ on a host with AVX-512 (from iteration 1 on an Intel Xeon
    with AVX-512); on a host without it, both environments are that host and agree anyway. That the
    harness sets the pin itself, in every process that runs a cell, is issue 38's next step."""
    assert rows(pinned_environment(), tmp_path / "a") == rows(
        pinned_environment(older_host_environment()), tmp_path / "b")
