"""A cell function that fails on purpose, importable by Ray workers (tests of failure handling)."""

from harness.cell import CellResult, CellSpec, run_cell

FAILING_ALGORITHM = "vucb-unif"


def fail_vucb_unif(spec: CellSpec) -> CellResult:
    """``run_cell``, except that every vucb-unif cell raises ``RuntimeError``."""
    if spec.algorithm == FAILING_ALGORITHM:
        raise RuntimeError(f"injected failure in {spec.problem}/{spec.algorithm}/seed{spec.seed}")
    return run_cell(spec)


def slow_cell(spec: CellSpec) -> CellResult:
    """``run_cell`` that takes at least 2 s, so that a node can be killed while cells run on it."""
    import time

    start = time.monotonic()
    result = run_cell(spec)
    time.sleep(max(0.0, 2.0 - (time.monotonic() - start)))
    return result
