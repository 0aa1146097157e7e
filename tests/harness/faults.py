"""A cell function that fails on purpose, importable by Ray workers (tests of failure handling)."""

from harness.cell import CellResult, CellSpec, run_cell

FAILING_ALGORITHM = "vucb-unif"


def fail_vucb_unif(spec: CellSpec) -> CellResult:
    """``run_cell``, except that every vucb-unif cell raises ``RuntimeError``."""
    if spec.algorithm == FAILING_ALGORITHM:
        raise RuntimeError(f"injected failure in {spec.problem}/{spec.algorithm}/seed{spec.seed}")
    return run_cell(spec)
