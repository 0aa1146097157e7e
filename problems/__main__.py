"""``python -m problems``: list the registered problems, or (re)certify their optima.

    python -m problems                      # a table of every problem
    python -m problems --json               # the same as a JSON list
    python -m problems --check-optima       # recompute every optimum, compare with the table
    python -m problems --write-optima [NAME ...]  # recompute and rewrite problems/optima.json
        [--target T]    # only this target (var, worst_case, cvar; repeatable; default all three):
                        # the entry's other targets are kept
        [--workers N]   # processes for the simulated problems' searches (default 1)
        [--partial]     # robot-push-3-2: write the best found so far, labelled "complete": false
    python -m problems --search-optimum MODULE:ATTR [--alpha A] [--points N]
                    # your own problem: search both optima (any d_x, d_z) and print them as the
                    # Optimum(...) to declare (a lower bound: problems.optima.sobol_compass_maximize)
"""

from __future__ import annotations

import argparse
import json
import sys

from problems.distributions import DiscreteZ
from problems.optima import GENERAL_POINTS, TARGETS, load_table, search_problem, write_table
from problems.registry import PROBLEMS, build_problem


def _rows() -> list[dict]:
    table = load_table()
    rows = []
    for name in PROBLEMS:
        p = build_problem(name, with_optimum=False)
        entry = table.get(name)
        rows.append({
            "name": name,
            "d_x": p.d_x,
            "d_z": p.d_z,
            "z": p.z.size if isinstance(p.z, DiscreteZ) else "continuous",
            "z_distribution": "discrete" if isinstance(p.z, DiscreteZ) else p.z.kind,
            "alpha": p.alpha,
            "noise_std": p.noise_std,
            "n_init": p.n_init,
            "iterations": p.iterations,
            **{f"{key}_{target}": entry[target][field] if entry and target in entry else None
               for target in TARGETS for key, field in (("optimum", "value"), ("argmax", "argmax"))},
            "description": p.description,
        })
    return rows


def _print_table(rows: list[dict]) -> None:
    def fmt(v: object) -> str:
        if isinstance(v, float):
            return f"{v:.9g}"
        if isinstance(v, list):
            return "(" + ", ".join(f"{c:.6f}" for c in v) + ")"
        return "-" if v is None else str(v)

    columns = ["name", "d_x", "d_z", "z", "alpha", "noise_std", "n_init", "iterations",
               "optimum_var", "argmax_var", "optimum_worst_case", "argmax_worst_case", "optimum_cvar"]
    cells = [[fmt(r[c]) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))


def merge_entry(old: dict | None, new: dict, targets: tuple[str, ...]) -> dict:
    """The table's entry after a search of ``targets``: ``new`` whole when it searched the entry's
    every target (or there was none); else ``old`` with each searched target replaced, carrying the
    search's own description (method, size, seconds: ``search``), since the entry's describe the
    search of the targets kept."""
    if old is None or set(targets) >= set(TARGETS) & (set(old) | set(targets)):
        return new
    about = {k: v for k, v in new.items() if k not in TARGETS and k != "alpha"}
    if old["alpha"] != new["alpha"]:
        raise ValueError(f"the entry is at alpha {old['alpha']}, the search at {new['alpha']}")
    return old | {t: {**new[t], "search": about} for t in targets}


def _certify(names: list[str], write: bool, workers: int = 1, partial: bool = False,
             targets: tuple[str, ...] = TARGETS) -> int:
    table = load_table()
    found: dict[str, dict] = {}
    largest = 0.0
    for name in names:
        entry = search_problem(build_problem(name, with_optimum=False), workers=workers, partial=partial,
                               targets=targets)
        listed = ", ".join(f"{t}* = {entry[t]['value']:.12f} at {entry[t]['argmax']}" for t in targets)
        print(f"{name}: {listed} ({entry['seconds']} s)", flush=True)
        if name in table:
            largest = max([largest, *(abs(entry[k]["value"] - table[name][k]["value"])
                                      for k in targets if k in table[name])])
        found[name] = entry
    print(f"largest difference from the committed table: {largest:.3e}")
    if write:
        # re-read first: a search can take hours, and others may have written entries meanwhile
        latest = load_table()
        write_table(latest | {name: merge_entry(latest.get(name), entry, targets)
                              for name, entry in found.items()})
        return 0
    return 0 if largest <= 1e-7 else 1


def _search_optimum(name: str, alpha: float | None, points: int) -> int:
    """Search a problem's optima with the general search; print them and the declaration."""
    if alpha is not None and not 0.0 < alpha < 1.0:
        print(f"python -m problems: error: --alpha must lie in (0, 1), got {alpha}", file=sys.stderr)
        return 2
    if points < 1:
        print(f"python -m problems: error: --points must be >= 1, got {points}", file=sys.stderr)
        return 2
    try:
        problem = build_problem(name, with_optimum=False)
    except (KeyError, ValueError) as error:
        print(f"python -m problems: error: {error.args[0] if isinstance(error, KeyError) else error}",
              file=sys.stderr)
        return 2
    print(f"searching {name} (d_x = {problem.d_x}, d_z = {problem.d_z}, alpha = "
          f"{problem.alpha if alpha is None else alpha}): {points} Sobol points, then a compass search",
          file=sys.stderr, flush=True)
    entry = search_problem(problem, alpha, general=True, points=points)
    print(json.dumps(entry, indent=2))
    var, worst = entry["var"], entry["worst_case"]
    print(f"# declare it (a lower bound: not certified; {entry['seconds']} s):\n"
          f"Optimum(var={var['value']!r}, argmax_var={tuple(var['argmax'])!r}, "
          f"worst_case={worst['value']!r}, argmax_worst_case={tuple(worst['argmax'])!r}, "
          f"lower_bound=True)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m problems`` (also the documentation's CLI reference)."""
    parser = argparse.ArgumentParser(prog="python -m problems", description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    mode.add_argument("--check-optima", nargs="*", metavar="NAME",
                      help="recompute optima (default: all) and compare with the table")
    mode.add_argument("--write-optima", nargs="*", metavar="NAME",
                      help="recompute optima (default: all) and rewrite problems/optima.json")
    mode.add_argument("--search-optimum", metavar="MODULE:ATTR",
                      help="search your own problem's optima with the general search and print them")
    parser.add_argument("--alpha", type=float, default=None, help="with --search-optimum: the risk "
                        "level (default: the problem's)")
    parser.add_argument("--points", type=int, default=GENERAL_POINTS, metavar="N",
                        help=f"with --search-optimum: Sobol points before the compass search "
                        f"(default {GENERAL_POINTS})")
    parser.add_argument("--target", action="append", choices=TARGETS, default=None,
                        help="with --check-optima / --write-optima: only this target (repeatable; "
                        "default: var, worst_case and cvar)")
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="processes for the searches of the simulated problems (default 1)")
    parser.add_argument("--partial", action="store_true",
                        help="robot-push-3-2: stop its quasi-random phase where its checkpoint is, "
                        "refine and write the entry labelled complete: false")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.search_optimum is not None:
        return _search_optimum(args.search_optimum, args.alpha, args.points)
    names = args.check_optima if args.check_optima is not None else args.write_optima
    if names is not None:
        unknown = sorted(set(names) - set(PROBLEMS))
        if unknown:
            print(f"python -m problems: error: unknown problem(s) {', '.join(unknown)}; "
                  f"valid: {', '.join(PROBLEMS)}", file=sys.stderr)
            return 2
        targets = tuple(dict.fromkeys(args.target)) if args.target else TARGETS
        return _certify(names or list(PROBLEMS), write=args.write_optima is not None,
                        workers=args.workers, partial=args.partial, targets=targets)
    rows = _rows()
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        _print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
