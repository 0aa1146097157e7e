"""One iteration of a run, timed at the run's own mid-run state: alone, beside a second copy, and native.

    python benchmarks/resume_iteration.py CHECKPOINT [--steps 1] [--modes alone,beside,native] [--profile]

CHECKPOINT is a cell's checkpoint file (a results folder's ``_checkpoints/PROBLEM/ALGORITHM/seedS-HASH.ckpt``,
or a staged one). Each mode runs the ``--steps`` iterations after it in fresh processes
(:func:`harness.cell.resumed_rows`: the whole run's rows for those iterations; nothing is written):

* ``alone``: one process, pinned as ``harness.run`` pins itself (:func:`harness.kernels.pin_process`);
* ``beside``: two such processes at once, on the same state (what a grid on two cores does, the two cells'
  memory traffic included);
* ``native``: one process with the pin's opt-out (``VARBO_NATIVE_KERNELS=1``): the host's own kernels
  (on Intel, MKL's automatic branch instead of its reproducible AVX2 one).

It prints each process's seconds per iteration (the acquisition's ``t_acq_s`` and the whole iteration's
``t_fit_s + t_acq_s + t_rec_s + t_eval_s``), their ratio to ``alone`` measured in this one run, and whether
each mode's rows (x, z, y, x_rec, regret) are those of ``alone`` (pinned processes on one host must agree bit
for bit; native ones may differ in the last bits, which the search amplifies). ``--profile`` adds the
``alone`` process's cProfile, the 15 functions of most own time.

Why: a knowledge gradient's iterations at large |W| were several times slower on one host than on another
of the same size; this says whether the pin's kernels, the neighbour's memory traffic or the host itself is
where the time goes, at the very state the run is in.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere: the packages of this checkout
    sys.path.insert(0, str(ROOT))

from harness.kernels import NATIVE_VARIABLE, cpu_model, pin_process, unpinned_environment  # noqa: E402

MODES = ("alone", "beside", "native")
COMPARED = ("x", "z", "y", "x_rec", "regret")
TIMINGS = ("t_fit_s", "t_acq_s", "t_rec_s", "t_eval_s")


def child(path: Path, steps: int, profile: bool) -> None:
    """Run the iterations after the checkpoint at ``path`` in this process; print one JSON line."""
    mode = pin_process([])  # before numpy, scipy and torch load, as harness.run does
    import cProfile
    import io
    import pstats

    import torch

    from harness.cell import resumed_rows
    from harness.kernels import host_record
    from harness.results import spec_from_dict

    data = path.read_bytes()
    state = torch.load(io.BytesIO(data), weights_only=True)  # tensors and plain data only
    spec = spec_from_dict(json.loads(state["spec"]))
    profiler = cProfile.Profile() if profile else None
    start = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    rows = resumed_rows(spec, data, steps)
    if profiler is not None:
        profiler.disable()
    wall = time.perf_counter() - start
    text = ""
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(15)
        text = out.getvalue()
    print(json.dumps({
        "mode": mode, "host": host_record(), "wall_s": wall, "profile": text,
        "cell": f"{spec.problem} / {spec.algorithm} / seed {spec.seed} ({spec.risk})",
        "after": state["rows"][-1]["iteration"],
        "rows": [{"iteration": r["iteration"], **{k: r.get(k) or 0.0 for k in TIMINGS},
                  "compared": [repr(r.get(k)) for k in COMPARED]} for r in rows]}))


def environment(native: bool) -> dict[str, str]:
    """This process's environment without the pin's variables; with the opt-out where ``native``."""
    return unpinned_environment() | ({NATIVE_VARIABLE: "1"} if native else {})


def launch(path: Path, steps: int, native: bool, profile: bool) -> subprocess.Popen:
    """A fresh process running :func:`child` (pinned unless ``native``), its output piped."""
    argv = [sys.executable, __file__, str(path), "--child", "--steps", str(steps)]
    argv += ["--profile"] if profile else []
    return subprocess.Popen(argv, cwd=ROOT, env=environment(native), stdout=subprocess.PIPE, text=True)


def collect(processes: list[subprocess.Popen]) -> list[dict]:
    """Each process's JSON line, in order; exits with the child's code where one failed."""
    replies = []
    for process in processes:
        out, _ = process.communicate()
        if process.returncode != 0:
            sys.exit(f"a timed process failed (exit {process.returncode}); its error is above")
        replies.append(json.loads(out.strip().splitlines()[-1]))
    return replies


def per_iteration(reply: dict) -> tuple[float, float]:
    """The median acquisition seconds and the median whole iteration's seconds of one process."""
    rows = reply["rows"]
    acq = sorted(r["t_acq_s"] for r in rows)[len(rows) // 2]
    whole = sorted(sum(r[k] for k in TIMINGS) for r in rows)[len(rows) // 2]
    return acq, whole


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path, help="a cell's checkpoint file")
    parser.add_argument("--steps", type=int, default=1, help="iterations after the checkpoint (default 1)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    parser.add_argument("--profile", action="store_true", help="print the alone process's cProfile")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    modes = args.modes.split(",")
    if not args.checkpoint.is_file() or args.steps < 1 or not set(modes) <= set(MODES):
        parser.exit(2, f"error: need a checkpoint file, --steps >= 1 and modes of {', '.join(MODES)}\n")
    if args.child:
        child(args.checkpoint, args.steps, args.profile)
        return 0
    results: dict[str, list[dict]] = {}
    for mode in modes:  # one after another: only ``beside`` shares the host on purpose
        count = 2 if mode == "beside" else 1
        results[mode] = collect([launch(args.checkpoint, args.steps, mode == "native",
                                        args.profile and mode == "alone") for _ in range(count)])
    report(results)
    return 0


def report(results: dict[str, list[dict]]) -> None:
    """Print the table, the ratios to ``alone`` and the rows' agreement."""
    first = next(iter(results.values()))[0]
    rows = first["rows"]
    span = f"iterations {rows[0]['iteration']}-{rows[-1]['iteration']}" if rows else "no iteration left"
    print(f"host: {cpu_model()}; cell {first['cell']}, after iteration {first['after']}: {span}")
    base = per_iteration(results["alone"][0]) if "alone" in results and rows else None
    reference = results["alone"][0]["rows"] if "alone" in results else None
    print(f"{'mode':8} {'process':>7} {'kernels':>8} {'torch':>7} {'acq s/it':>9} {'whole s/it':>11} "
          f"{'acq ratio':>9} {'rows as alone':>14}")
    for mode, replies in results.items():
        for i, reply in enumerate(replies):
            acq, whole = per_iteration(reply) if rows else (0.0, 0.0)
            ratio = f"{acq / base[0]:.2f}" if base and base[0] > 0 else "-"
            compared = [r["compared"] for r in reply["rows"]]
            agree = reference is None or compared == [r["compared"] for r in reference]
            same = "-" if reference is None else "yes" if agree else "no"
            print(f"{mode:8} {i + 1:>7} {reply['host']['kernels']:>8} {reply['host']['torch_cpu']:>7} "
                  f"{acq:>9.2f} {whole:>11.2f} {ratio:>9} {same:>14}")
    if "alone" in results and results["alone"][0]["profile"]:
        print("\nalone, cProfile (own time):\n" + results["alone"][0]["profile"])


if __name__ == "__main__":
    raise SystemExit(main())
