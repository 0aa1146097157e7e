"""The numerical libraries' code paths: what pins them to one path on every x86-64 host with AVX2,
and what makes this host behave like an older one (to test the pin on one machine).

The libraries under a cell choose their kernels by the CPU they find (issue 38): torch's own
vectorized kernels by ``ATEN_CPU_CAPABILITY`` (AVX-512 where the CPU has it), Intel MKL (torch's
BLAS and LAPACK on x86-64) by its own dispatch, OpenBLAS (numpy's and scipy's) by the core type,
and numpy's SIMD loops by its run-time dispatch. Each rounds differently, and a BO trajectory
amplifies one ulp into a different run. Each library reads its variable once, when it loads: the
environment must be set before the process imports numpy or torch (a child process, or a Ray
worker through its runtime environment).

* :func:`pinned_environment`: one code path everywhere (MKL's conditional numerical
  reproducibility at AVX2, torch's AVX2 kernels, OpenBLAS's Haswell kernels, numpy without its
  AVX-512 loops).
* :func:`older_host_environment`: this host restricted the way a CPU without AVX-512 would be
  (MKL's instructions limited rather than pinned): the second host of a two-host test.

This module does not import numpy or torch at import time.
"""

from __future__ import annotations

import contextlib
import os
import platform
from collections.abc import Mapping
from pathlib import Path

#: The code path every pinned process takes.
PINNED = {"MKL_CBWR": "AVX2", "ATEN_CPU_CAPABILITY": "avx2", "OPENBLAS_CORETYPE": "Haswell"}


def avx512_dispatch_targets() -> str:
    """numpy's dispatched SIMD targets that need AVX-512 (``X86_V4``, ``AVX512_*``), space-separated,
    as ``NPY_DISABLE_CPU_FEATURES`` takes them. Their names change across numpy releases, so they
    are read from the numpy installed here; call it in a process that is not itself to be pinned
    (it imports numpy)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__

    return " ".join(t for t in __cpu_dispatch__ if t == "X86_V4" or t.startswith("AVX512"))


def pinned_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with the pin of :data:`PINNED` and numpy's
    AVX-512 loops disabled."""
    env = dict(os.environ if base is None else base)
    env.update(PINNED)
    targets = avx512_dispatch_targets()
    if targets:
        env["NPY_DISABLE_CPU_FEATURES"] = targets
    return env


def older_host_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` with every library restricted as on an x86-64 CPU with AVX2 and no AVX-512: MKL
    limited to AVX2 (its own choice within that, not a pin), torch's AVX2 kernels, OpenBLAS's
    Haswell kernels, numpy without AVX-512."""
    env = dict(os.environ if base is None else base)
    env.update({"MKL_ENABLE_INSTRUCTIONS": "AVX2", "ATEN_CPU_CAPABILITY": "avx2",
                "OPENBLAS_CORETYPE": "Haswell"})
    targets = avx512_dispatch_targets()
    if targets:
        env["NPY_DISABLE_CPU_FEATURES"] = targets
    return env


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux), or the platform's processor string."""
    with contextlib.suppress(OSError):  # not Linux: the platform's string below
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"
