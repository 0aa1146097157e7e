"""The environments of :mod:`harness.kernels`: what they set, and that the pin makes two emulated
hosts (this one as it is, and this one restricted as a CPU without AVX-512) give the same rows of a
V-UCB cell, whose GP algebra (MKL), kernels (torch) and sorting (numpy) all take part."""

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harness.kernels import (
    NATIVE_VARIABLE,
    PINNED,
    can_pin,
    cpu_model,
    host_summary,
    older_host_environment,
    pinned_environment,
    unpinned_environment,
)

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
    marked = older | pinned | {NATIVE_VARIABLE: "1", "NPY_DISABLE_CPU_FEATURES": "AVX512F"}
    assert unpinned_environment(marked) == {"PATH": "/usr/bin"}  # every pin, restriction and opt-out gone


def rows(env: dict[str, str], out: Path) -> list[dict]:
    subprocess.run([sys.executable, "-m", "harness.run", "--problem", "goldstein-1-1-discrete",
                    "--algorithm", "vucb-prob", "--iterations", "12", "--out", str(out)],
                   cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    (path,) = out.rglob("*.parquet")
    return pq.read_table(path, columns=COLUMNS).to_pylist()


def unpinned() -> dict[str, str]:
    """This process's environment without a pin or the opt-out."""
    return unpinned_environment()


def test_the_command_pins_itself_so_two_emulated_hosts_agree(tmp_path: Path) -> None:
    """Neither environment carries the pin: ``harness.run`` sets it before numpy and torch load.
    With ``--native-kernels`` the same two runs differ on a host with AVX-512 (from iteration 1 on
    an Intel Xeon with AVX-512; tests/harness/test_two_hosts.py has every kind of cell)."""
    assert rows(unpinned(), tmp_path / "a") == rows(older_host_environment(unpinned()), tmp_path / "b")


def child(code: str, env: dict[str, str], *argv: str) -> dict:
    """Run ``code`` in a fresh interpreter of this checkout; its last line of output, as JSON."""
    done = subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT, env=env, check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


PIN = """import json, os, sys
{before}
import harness.kernels as k
mode = k.pin_process(sys.argv[1:])
import torch
print(json.dumps({{"mode": mode, "record": k.host_record(), "cbwr": os.environ.get("MKL_CBWR"),
                  "native": os.environ.get(k.NATIVE_VARIABLE)}}))"""


def test_pin_process_pins_before_the_libraries_load_and_only_then() -> None:
    if not can_pin():
        pytest.skip("this host has no AVX2: nothing to pin (cells run native)")
    fresh = child(PIN.format(before=""), unpinned())
    assert fresh["mode"] == "pinned" and fresh["cbwr"] == "AVX2"
    assert fresh["record"]["kernels"] == "pinned" and fresh["record"]["torch_cpu"] == "AVX2"
    late = child(PIN.format(before="import numpy"), unpinned())  # loaded first: too late to pin
    assert late["mode"] == "native" and late["cbwr"] is None and late["record"]["kernels"] == "native"
    flag = child(PIN.format(before=""), unpinned(), "--native-kernels")
    assert flag["mode"] == "native" and flag["native"] == "1" and flag["cbwr"] is None
    variable = child(PIN.format(before=""), unpinned() | {NATIVE_VARIABLE: "1"})
    assert variable["mode"] == "native"
    inherited = child(PIN.format(before="import numpy"), pinned_environment(unpinned()))
    assert inherited["mode"] == "pinned"  # set before this process started: its libraries read it


def test_isa_level_reads_the_cpu_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    """The levels of the x86-64 psABI, from the flags of ``/proc/cpuinfo``."""
    import harness.kernels as kernels

    def with_flags(flags: str) -> str:
        monkeypatch.setattr(kernels.Path, "read_text", lambda self: f"processor : 0\nflags : {flags}\n")
        return kernels.isa_level()

    v3 = "sse4_2 popcnt avx avx2 fma bmi2"
    assert with_flags(v3) == "x86-64-v3"
    assert with_flags(v3 + " avx512f avx512bw avx512cd avx512dq avx512vl") == "x86-64-v4"
    assert with_flags(v3 + " avx512f") == "x86-64-v3"  # AVX-512 in part is not v4
    assert with_flags("sse4_2 popcnt") == "x86-64-v2"
    assert with_flags("sse2") == "x86-64-v1"


def test_the_pin_holds_on_intel_cpus_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """MKL's AVX2 branch exists on Intel CPUs (oneMKL's guide to conditional numerical
    reproducibility); the vendor comes from ``/proc/cpuinfo``'s ``vendor_id``."""
    import harness.kernels as kernels

    def on(vendor_line: str) -> tuple[str, bool]:
        text = f"processor : 0\n{vendor_line}cpu family : 6\n\nprocessor : 1\n"
        monkeypatch.setattr(kernels.Path, "read_text", lambda self: text)
        return kernels.cpu_vendor(), kernels.pin_holds()

    assert on("vendor_id : GenuineIntel\n") == ("GenuineIntel", True)
    assert on("vendor_id\t: AuthenticAMD\n") == ("AuthenticAMD", False)
    assert on("") == ("", False)  # no vendor (another architecture): not a host the pin covers
    assert [kernels.other_vendor(v) for v in ("GenuineIntel", "AuthenticAMD", "")] == ["", "AuthenticAMD", ""]


def test_the_kernels_line_warns_on_a_cpu_the_pin_does_not_cover(monkeypatch: pytest.MonkeyPatch) -> None:
    """``harness.run``'s first lines say when pinned rows may differ from an Intel host's."""
    import harness.cli as cli

    record = {"kernels": "pinned", "torch_cpu": "AVX2", "isa": "x86-64-v3", "cpu": "X (model 1)"}
    monkeypatch.setattr(cli, "host_record", lambda: record)
    monkeypatch.setattr(cli, "other_vendor", lambda: "")
    assert cli.kernels_line() == "kernels pinned (torch AVX2) on X (model 1)"
    monkeypatch.setattr(cli, "other_vendor", lambda: "AuthenticAMD")
    assert cli.kernels_line().endswith("(not an Intel CPU, AuthenticAMD: MKL takes its own branch here, "
                                       "so these rows may differ from an Intel host's)")
    record["kernels"] = "native"  # native rows are this CPU's anyway: nothing to add
    assert cli.kernels_line() == "kernels native (torch AVX2) on X (model 1)"


def test_host_summary_counts_the_cells_of_each_host() -> None:
    a = {"kernels": "pinned", "torch_cpu": "AVX2", "isa": "x86-64-v4", "cpu": "X (model 1)"}
    b = {"kernels": "native", "torch_cpu": "AVX512", "isa": "x86-64-v4", "cpu": "X (model 1)"}
    assert host_summary([a, b, a, {}]) == [
        "2 cells pinned (torch AVX2) on X (model 1), x86-64-v4",
        "1 cells native (torch AVX512) on X (model 1), x86-64-v4",
        "1 cells recorded no kernels or CPU (written before cells recorded them)"]


MODE_TEST = """import harness.kernels as k

k.pin_process()  # as tests/conftest.py does, at collection: after every plugin


def test_mode():
    print("MODE", "pinned" if k.is_pinned() else "native")
"""


def test_the_pytest_plugin_pins_before_a_plugin_that_loads_numpy(tmp_path: Path) -> None:
    """pyproject's ``-p harness.pytest_pin`` pins before the plugins pytest loads by entry point or
    from ``PYTEST_PLUGINS`` (here numpy itself stands for pytest-randomly, which imports it); without
    it the same run is native. A child pytest in a folder with no configuration of its own."""
    if not can_pin():
        pytest.skip("this host has no AVX2: nothing to pin (cells run native)")
    (tmp_path / "test_mode.py").write_text(MODE_TEST)
    env = unpinned() | {"PYTEST_PLUGINS": "numpy", "PYTHONPATH": str(ROOT)}

    def mode(*plugins: str) -> str:
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:randomly",
                               "-p", "no:cacheprovider", *plugins, "test_mode.py"], cwd=tmp_path,
                              env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        return next(line for line in done.stdout.splitlines() if line.startswith("MODE"))

    assert mode("-p", "harness.pytest_pin") == "MODE pinned"
    assert mode() == "MODE native"  # numpy came first: the pin at collection sets nothing
