"""The numerical libraries' code paths: what pins them to one path on every Intel x86-64 host with
AVX2, and what makes this host behave like an older one (to test the pin on one machine).

The libraries under a cell choose their kernels by the CPU they find: torch's own
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
* :func:`pin_process`: the pin put into this process's own environment, by every command that runs
  cells (``harness.run``, its grids' Ray workers, ``harness.verify``) before numpy and torch load,
  unless ``--native-kernels`` or :data:`NATIVE_VARIABLE` opts out.
* :func:`host_record`: what a cell records of the host and of the code path it took (CPU model,
  instruction-set level, torch's CPU capability, pinned or native).
* :func:`pin_holds`: whether this CPU is one the pin covers. MKL keeps its AVX2 branch on Intel
  CPUs only (on others it takes its own), and the approximate reciprocal instructions (``rcpps``,
  ``rsqrtps``) give each vendor's own bits. Emulators show it: ``qemu-x86_64``, which computes those
  instructions exactly where Intel's hardware approximates them, gave torch's float64 ``sqrt``
  (MKL's vector math: its bits follow MKL's settings, not torch's) other bits in 57 of 4099 values,
  and a published cell parted at iteration 37; so an emulated CPU does not stand in for a second host.

This module does not import numpy or torch at import time.
"""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

#: Where Linux describes the CPU (its vendor, model and flags); tests point it at another CPU's text.
CPUINFO = Path("/proc/cpuinfo")

#: The code path every pinned process takes.
PINNED = {"MKL_CBWR": "AVX2", "ATEN_CPU_CAPABILITY": "avx2", "OPENBLAS_CORETYPE": "Haswell"}

#: Set (to anything but "" or "0") to run on the host's native kernels: faster on some hosts, rows
#: that another host may not reproduce bit for bit; the cells say ``kernels: native``.
NATIVE_VARIABLE = "VARBO_NATIVE_KERNELS"

#: The command-line flag of the same opt-out (``harness.run``, ``harness.verify``).
NATIVE_FLAG = "--native-kernels"

#: The libraries that read the pin when they load: once one is loaded, setting it is too late.
PINNED_LIBRARIES = ("numpy", "torch", "scipy")


def avx512_dispatch_targets() -> str:
    """numpy's dispatched SIMD targets that need AVX-512 (``X86_V4``, ``AVX512_*``).

    Their names change across numpy releases, so they are read from the numpy installed here; call it in a
    process that is not itself to be pinned (it imports numpy).

    Returns:
        The targets space-separated, as ``NPY_DISABLE_CPU_FEATURES`` takes them; ``""`` where numpy has none.
    """
    from numpy._core._multiarray_umath import __cpu_dispatch__

    return " ".join(t for t in __cpu_dispatch__ if t == "X86_V4" or t.startswith("AVX512"))


def _dispatch_targets_elsewhere() -> str:
    """:func:`avx512_dispatch_targets` computed in a child process: this one must not load numpy
    before it is pinned (about 0.1 s, once per command: its children inherit the result)."""
    code = "from harness.kernels import avx512_dispatch_targets as t; print(t())"
    env = {k: v for k, v in os.environ.items() if k != "NPY_DISABLE_CPU_FEATURES"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=Path(__file__).resolve().parent.parent, timeout=120, check=True)
    return done.stdout.strip()


def pin_variables() -> dict[str, str]:
    """The variables of the pin: :data:`PINNED` and, where numpy has AVX-512 loops, one that disables them.

    They are passed as they are to a Ray cluster's workers, whose processes start with them.

    Returns:
        Variable -> value, :data:`PINNED`'s and ``NPY_DISABLE_CPU_FEATURES`` (:func:`avx512_dispatch_targets`)
        where there are targets to disable.
    """
    targets = (avx512_dispatch_targets() if "numpy" in sys.modules
               else _dispatch_targets_elsewhere())
    return {**PINNED, **({"NPY_DISABLE_CPU_FEATURES": targets} if targets else {})}


def pinned_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` with the pin of :func:`pin_variables`.

    Args:
        base: an environment (default: this process's).

    Returns:
        A new dict, ``base``'s variables with the pin's set over them.
    """
    return dict(os.environ if base is None else base) | pin_variables()


def native_requested(argv: list[str] | None = None) -> bool:
    """Whether the opt-out is asked for.

    Args:
        argv: the command's arguments.

    Returns:
        True where :data:`NATIVE_FLAG` is in ``argv`` or :data:`NATIVE_VARIABLE` is set in the environment (to
        anything but ``""`` or ``0``).
    """
    return NATIVE_FLAG in (argv or []) or os.environ.get(NATIVE_VARIABLE, "") not in ("", "0")


def is_pinned(env: Mapping[str, str] | None = None) -> bool:
    """Whether ``env`` carries the pin of :data:`PINNED`.

    Args:
        env: an environment (default: this process's).

    Returns:
        True where every variable of :data:`PINNED` has its pinned value.
    """
    env = os.environ if env is None else env
    return all(env.get(key) == value for key, value in PINNED.items())


def pin_process(argv: list[str] | None = None) -> str:
    """Pin this process's numerical libraries unless the opt-out is asked for.

    The pin is :func:`pin_variables`, set into ``os.environ``. With the opt-out, :data:`NATIVE_VARIABLE` is
    set, so that the processes this one starts, Ray's workers among them, are native too, and the environment
    is left as it was given: a pin set there by hand still holds, and the cells say so. Call it before numpy,
    scipy or torch load: a library already loaded keeps the kernels it chose, so then nothing is set and the
    process stays native. A host that cannot take the pin (:func:`can_pin`) stays native too.

    Args:
        argv: the command's arguments, searched for :data:`NATIVE_FLAG`.

    Returns:
        The mode, ``"pinned"`` or ``"native"``.
    """
    if native_requested(argv):  # the environment as it was given: the harness sets nothing
        os.environ[NATIVE_VARIABLE] = "1"
        return "pinned" if is_pinned() else "native"
    if is_pinned():  # inherited from the process that started this one
        return "pinned"
    if any(name in sys.modules for name in PINNED_LIBRARIES) or not can_pin():
        return "native"
    os.environ.update(pin_variables())
    return "pinned"


def worker_variables() -> dict[str, str]:
    """The variables that give a Ray worker this process's kernels.

    Returns:
        The pin's (:func:`pin_variables`) when this process is pinned, else the opt-out
        (:data:`NATIVE_VARIABLE` set to ``1``).
    """
    return pin_variables() if is_pinned() else {NATIVE_VARIABLE: "1"}


def can_pin() -> bool:
    """Whether this host can take the pin: an x86-64 CPU with AVX2 and FMA (``x86-64-v3`` or above).

    Elsewhere (ARM, an older x86-64) the pinned kernels do not exist and cells run native.

    Returns:
        True at ``x86-64-v3`` or ``x86-64-v4`` (:func:`isa_level`).
    """
    return isa_level() in ("x86-64-v3", "x86-64-v4")


def unpinned_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` without the pin or the opt-out: a command started with it pins itself (:func:`pin_process`).

    Args:
        base: an environment (default: this process's).

    Returns:
        A new dict, ``base``'s variables without :data:`PINNED`'s, ``NPY_DISABLE_CPU_FEATURES``,
        ``MKL_ENABLE_INSTRUCTIONS`` and :data:`NATIVE_VARIABLE`.
    """
    drop = {*PINNED, "NPY_DISABLE_CPU_FEATURES", "MKL_ENABLE_INSTRUCTIONS", NATIVE_VARIABLE}
    return {k: v for k, v in (os.environ if base is None else base).items() if k not in drop}


def older_host_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` with every library restricted as on an x86-64 CPU with AVX2 and no AVX-512.

    MKL is limited to AVX2 (its own choice within that, not a pin), torch to its AVX2 kernels, OpenBLAS to its
    Haswell kernels, numpy to its loops without AVX-512.

    Args:
        base: an environment (default: this process's).

    Returns:
        A new dict, ``base``'s variables with ``MKL_ENABLE_INSTRUCTIONS``, ``ATEN_CPU_CAPABILITY``,
        ``OPENBLAS_CORETYPE`` and, where numpy has AVX-512 loops, ``NPY_DISABLE_CPU_FEATURES`` set.
    """
    env = dict(os.environ if base is None else base)
    env.update({"MKL_ENABLE_INSTRUCTIONS": "AVX2", "ATEN_CPU_CAPABILITY": "avx2",
                "OPENBLAS_CORETYPE": "Haswell"})
    targets = avx512_dispatch_targets()
    if targets:
        env["NPY_DISABLE_CPU_FEATURES"] = targets
    return env


def isa_level() -> str:
    """The host's x86-64 micro-architecture level, from its CPU flags.

    Returns:
        ``x86-64-v4`` with AVX-512, ``x86-64-v3`` with AVX2 and FMA (and BMI2), else ``x86-64-v2`` or
        ``x86-64-v1``; the machine's name where there are no flags to read (``unknown`` without one).
    """
    flags: set[str] = set()
    with contextlib.suppress(OSError):
        for line in CPUINFO.read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    if not flags:
        return platform.machine() or "unknown"
    for level, needs in (("x86-64-v4", {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}),
                         ("x86-64-v3", {"avx2", "fma", "bmi2"}), ("x86-64-v2", {"sse4_2", "popcnt"})):
        if needs <= flags:
            return level
    return "x86-64-v1"


def host_record() -> dict[str, str]:
    """What a cell records of the process that ran it. Imports torch.

    Returns:
        A dict with ``cpu`` (the model, :func:`cpu_model`), ``isa`` (the host's level, :func:`isa_level`),
        ``torch_cpu`` (the kernels torch dispatched to, ``AVX2`` when pinned on any Intel x86-64 host with
        AVX2) and ``kernels`` (``pinned`` or ``native``; pinned when this process's environment carries the
        pin, which :func:`pin_process` sets only before the libraries load).
    """
    import torch

    return {"cpu": cpu_model(), "isa": isa_level(), "torch_cpu": torch.backends.cpu.get_cpu_capability(),
            "kernels": "pinned" if is_pinned() else "native"}


#: The CPU vendor on which MKL's reproducible AVX2 branch (``MKL_CBWR=AVX2``) exists: oneMKL's
#: developer guide, "Getting Started with Conditional Numerical Reproducibility": on other CPUs
#: MKL takes its automatic branch instead, and its results may differ.
MKL_CNR_VENDOR = "GenuineIntel"


def cpu_vendor() -> str:
    """The CPU's vendor string (``vendor_id`` of ``/proc/cpuinfo``).

    Returns:
        ``GenuineIntel``, ``AuthenticAMD``, ..., or ``""`` where there is none (not Linux, not x86-64).
    """
    with contextlib.suppress(OSError):
        for line in CPUINFO.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "vendor_id":
                return value.strip()
    return ""


def pin_holds(vendor: str | None = None) -> bool:
    """Whether the pin gives the reference bits on a CPU of ``vendor``: an Intel CPU.

    Elsewhere MKL ignores its AVX2 branch (:data:`MKL_CNR_VENDOR`), and the approximate reciprocal
    instructions its vector math uses round differently, so rows may part from an iteration on; the claims'
    statistics are what should agree (``analysis.recheck``).

    Args:
        vendor: a vendor string (default: this host's, :func:`cpu_vendor`).

    Returns:
        True for :data:`MKL_CNR_VENDOR`.
    """
    return (cpu_vendor() if vendor is None else vendor) == MKL_CNR_VENDOR


def other_vendor(vendor: str | None = None) -> str:
    """The vendor of a CPU the pin does not cover, for the commands' warnings.

    Args:
        vendor: a vendor string (default: this host's, :func:`cpu_vendor`).

    Returns:
        ``vendor`` where it names a CPU the pin does not cover (a vendor other than Intel's,
        :func:`pin_holds`), else ``""`` (an Intel CPU, or no vendor to name).
    """
    vendor = cpu_vendor() if vendor is None else vendor
    return vendor if vendor and not pin_holds(vendor) else ""


def cpu_model() -> str:
    """The CPU's model name and its family, model and stepping numbers.

    They are read from ``/proc/cpuinfo`` on Linux: a virtual machine often names every CPU "Intel(R) Xeon(R)
    Processor", and the numbers tell Sapphire Rapids from Cascade Lake.

    Returns:
        The model name with its numbers in parentheses, e.g. ``NAME (family 6, model 143, stepping 8)``; else
        the platform's processor string, or ``unknown``.
    """
    fields: dict[str, str] = {}
    with contextlib.suppress(OSError):  # not Linux: the platform's string below
        for line in CPUINFO.read_text().splitlines():
            key, _, value = line.partition(":")
            if not key.strip():  # the first processor's block ends here
                break
            fields.setdefault(key.strip(), value.strip())
    if "model name" not in fields:
        return platform.processor() or "unknown"
    numbers = ", ".join(f"{name} {fields[key]}" for key, name in (
        ("cpu family", "family"), ("model", "model"), ("stepping", "stepping")) if key in fields)
    return f"{fields['model name']} ({numbers})" if numbers else fields["model name"]


def host_summary(provenances: list[Mapping]) -> list[str]:
    """The hosts the cells ran on, for ``harness.status`` and the report's provenance.

    Args:
        provenances: the cells' provenance records.

    Returns:
        One line per (kernels, torch's CPU kernels, instruction-set level, CPU model) that the records hold,
        with its number of cells, most cells first; then a line for the cells that recorded none (written
        before cells recorded their host), if any.
    """
    counts: dict[tuple, int] = {}
    unrecorded = 0
    for info in provenances:
        if info.get("kernels") is None:
            unrecorded += 1
            continue
        key = (info.get("kernels"), info.get("torch_cpu"), info.get("isa"), info.get("cpu"))
        counts[key] = counts.get(key, 0) + 1
    lines = [f"{n} cells {kernels} (torch {torch_cpu}) on {cpu}, {isa}"
             for (kernels, torch_cpu, isa, cpu), n in sorted(counts.items(), key=lambda kv: -kv[1])]
    if unrecorded:
        lines.append(f"{unrecorded} cells recorded no kernels or CPU (written before cells recorded them)")
    return lines


if __name__ == "__main__":  # ``eval "$(python -m harness.kernels)"``: this shell's processes pinned
    import shlex

    for key, value in pin_variables().items():
        print(f"export {key}={shlex.quote(value)}")
