"""The store's layout, recomputed independently of harness.store (tests compare against it)."""

import hashlib
import json
from pathlib import Path

from harness.cell import CellSpec

TIMINGS = {"t_fit_s", "t_acq_s", "t_rec_s", "t_eval_s"}


def expected_path(out: Path, spec: CellSpec) -> Path:
    """``out/<problem>/<algorithm>/seed<seed>-<first 12 hex of SHA-256 of the spec's JSON>``."""
    fields = {"problem": spec.problem, "algorithm": spec.algorithm, "seed": spec.seed,
              "iterations": spec.iterations, "alpha": spec.alpha, "options": [list(o) for o in spec.options]}
    if spec.risk != "var":  # a CVaR cell names its risk measure; a VaR cell's JSON is as it always was
        fields["risk"] = spec.risk
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return out / spec.problem / spec.algorithm / f"seed{spec.seed}-{digest}.parquet"


def visible_parquet(out: Path) -> list[Path]:
    """Every ``*.parquet`` under ``out`` outside '.'- and '_'-prefixed names, sorted."""
    return sorted(p for p in out.rglob("*.parquet")
                  if not any(part.startswith((".", "_")) for part in p.relative_to(out).parts))
