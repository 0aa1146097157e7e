"""The one place torch's default dtype is set: float64, for the duration of a ``with`` block.

GPyTorch and BoTorch create some constants and parameters at torch's default dtype, and a later
``.to(float64)`` keeps their float32 rounding; so model construction, BoTorch's test functions and
whole cells run inside :func:`default_float64`, which makes their results independent of the
caller's default (a Ray worker, the command line and a test process give the same rows).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch


@contextlib.contextmanager
def default_float64() -> Iterator[None]:
    """Set torch's default dtype to float64 inside the block, and restore the previous one after."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


@contextlib.contextmanager
def torch_threads(n: int = 1) -> Iterator[None]:
    """Run the block with ``n`` torch intra-op threads, and restore the previous count after.

    A cell's rows depend on the thread count, not only on its spec: torch splits large reductions
    into one chunk per thread, so their sums round differently (goldstein-1-1-discrete/vucb-prob/
    seed1 at 1 and 2 threads: the same x to 13 digits at iteration 17, then apart). Cells are
    defined at one thread, as the grid's workers run them; :func:`harness.cell.run_cell` pins it,
    so a test process, a resume and ``harness.verify`` give a worker's rows.
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
