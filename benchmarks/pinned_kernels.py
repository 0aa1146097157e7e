"""What pinning the numerical libraries' code paths costs, and whether it makes two hosts agree.

    python benchmarks/pinned_kernels.py [--cells NAME,...] [--repeats 2]

Each cell below runs as ``python -m harness.run --problem ... --algorithm ...`` (a fresh process,
so that each library reads its environment when it loads) under four environments of
:mod:`harness.kernels`: this host as it is (``native``, with ``VARBO_NATIVE_KERNELS=1``); this host
restricted as a CPU without AVX-512 would be (``older``, also native); and each of them as the
command runs by default, pinned (``pinned``, ``older+pinned``). It
prints, per cell:

* the compute seconds per iteration (the rows' t_fit_s + t_acq_s + t_rec_s + t_eval_s, the median
  over ``--repeats`` runs), native against pinned, and their ratio;
* whether the rows (x, z, y, x_rec, regret) of ``native`` and ``older`` agree bit for bit (two
  hosts without the pin), and those of ``pinned`` and ``older+pinned`` (two hosts with it).

The cells are short (reduced search effort where the smoke grid uses one): a few minutes in all.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere: the packages of this checkout
    sys.path.insert(0, str(ROOT))

from harness.kernels import NATIVE_VARIABLE, cpu_model, older_host_environment, unpinned_environment  # noqa: E402
from harness.schema import TIMINGS  # noqa: E402

#: name -> (problem, algorithm, iterations, smoke grid's reduced options or not)
CELLS = {
    "vucb-discrete": ("goldstein-1-1-discrete", "vucb-prob", 30, False),
    "lnso-continuous": ("branin-1-1-continuous", "vucb-prob", 6, True),
    "rhokg-apx": ("branin-1-1-discrete", "rhokg-apx", 6, True),
    "robot-pushing": ("robot-push-3-2", "vucb-prob", 6, False),
}
COLUMNS = ("x", "z", "y", "x_rec", "regret")


def environments() -> dict[str, dict[str, str]]:
    """The four environments, each a whole process environment. ``harness.run`` pins itself unless
    told not to: the unpinned two run with the opt-out, the pinned two as the command runs by default
    (no pin in the environment they are given)."""
    here = unpinned_environment()
    native = {NATIVE_VARIABLE: "1"}
    return {"native": here | native, "older": older_host_environment(here) | native,
            "pinned": here, "older+pinned": older_host_environment(here)}


def run(cell: str, env: dict[str, str], out: Path) -> tuple[list[tuple], float]:
    """One run of ``cell``: its rows (the compared columns) and compute seconds per iteration."""
    from harness.frames import read_results
    from harness.grid import smoke_options

    problem, algorithm, iterations, reduced = CELLS[cell]
    argv = [sys.executable, "-m", "harness.run", "--problem", problem, "--algorithm", algorithm,
            "--iterations", str(iterations), "--out", str(out)]
    for key, value in ((smoke_options(algorithm, "continuous" in problem) or {}) if reduced else {}).items():
        argv += ["--option", f"{key}={value}"]
    subprocess.run(argv, cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    frame = read_results(out).sort_values("iteration")
    rows = [tuple(repr(v) for v in row) for row in frame[list(COLUMNS)].itertuples(index=False)]
    seconds = frame[list(TIMINGS)].fillna(0.0).sum(axis=1).iloc[1:].mean()
    return rows, float(seconds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", default=",".join(CELLS), help=f"comma-separated, of {', '.join(CELLS)}")
    parser.add_argument("--repeats", type=int, default=2, help="runs per cell and environment (default 2)")
    args = parser.parse_args(argv)
    cells = args.cells.split(",")
    if unknown := [c for c in cells if c not in CELLS]:
        parser.error(f"unknown cells {unknown}; valid: {', '.join(CELLS)}")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    print(f"host: {cpu_model()}")
    envs = environments()
    for cell in cells:
        rows: dict[str, list[tuple]] = {}
        seconds: dict[str, list[float]] = {name: [] for name in envs}
        with tempfile.TemporaryDirectory() as scratch:
            for repeat in range(args.repeats):
                for name, env in envs.items():
                    got, s = run(cell, env, Path(scratch) / f"{name}-{repeat}")
                    rows.setdefault(name, got)
                    seconds[name].append(s)
        native, pinned = statistics.median(seconds["native"]), statistics.median(seconds["pinned"])
        unpinned_agree = rows["native"] == rows["older"]
        pinned_agree = rows["pinned"] == rows["older+pinned"]
        print(f"{cell:16s} s/iteration native {native:.3f}  pinned {pinned:.3f}  (pinned/native "
              f"{pinned / native:.2f})   two hosts: unpinned {'identical' if unpinned_agree else 'DIFFER'}, "
              f"pinned {'identical' if pinned_agree else 'DIFFER'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
