"""What ``python -m harness.verify`` says before it reruns anything: the versions and the hosts a
folder's cells recorded, against this process's.

Versions: those pinned in ``FOLDER/constraints.txt`` (pip constraints) against what is installed
here, or, without that file, those each cell recorded in its provenance. Hosts: the kernels (pinned
or native), torch's CPU kernels, the instruction-set level and the CPU model each cell recorded,
against :func:`harness.kernels.host_record` here. A difference is a warning, not an error: the rows
say whether the bits moved.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from harness.grid_cells import cell_label
from harness.kernels import host_record, other_vendor
from harness.results import Location
from harness.spec import CellSpec
from harness.store import installed_distributions

#: The pip constraints a published folder carries beside its cells.
CONSTRAINTS = "constraints.txt"


@dataclass(frozen=True)
class Cell:
    """A cell file of the folder: where it is, its spec and its ``varbo`` metadata."""

    path: Location
    spec: CellSpec
    meta: dict

    @property
    def label(self) -> str:
        """The cell's label, as ``--cell`` matches it.

        Returns:
            :func:`harness.grid_cells.cell_label` of its spec.
        """
        return cell_label(self.spec)



# ---------------------------------------------------------------------------------------------------
# versions


def _normalize(name: str) -> str:
    """A distribution's name as :func:`harness.store.installed_distributions` writes it."""
    return name.strip().lower().replace("_", "-").replace(".", "-")


def parse_pins(lines: list[str]) -> dict[str, str]:
    """The versions pinned by ``name==version`` lines.

    Comments after ``#``, environment markers after ``;`` and other lines are skipped.

    Args:
        lines: the lines of a constraints file.

    Returns:
        Normalized name -> version.
    """
    pins = {}
    for line in lines:
        text = line.split("#", 1)[0].split(";", 1)[0].strip()
        if "==" in text:
            name, version = text.split("==", 1)
            pins[_normalize(name)] = version.strip()
    return pins


def constraint_differences(text: str) -> list[str]:
    """The distributions pinned in a constraints file whose version differs here, or not installed here.

    Args:
        text: the constraints file's text.

    Returns:
        One line per such distribution, by name, with the published version and the one here.
    """
    here = parse_pins(installed_distributions())
    return [f"{name}: published {version}, here {here.get(name, 'not installed')}"
            for name, version in sorted(parse_pins(text.splitlines()).items())
            if here.get(name) != version]


def provenance_differences(cells: list[Cell]) -> list[str]:
    """The package versions the cells recorded that differ from the versions here.

    Args:
        cells: the cells whose provenance is read.

    Returns:
        One line per (package, recorded version) that differs, with how many cells recorded it, sorted; then a
        line for the cells that recorded none, if any.
    """
    here = parse_pins(installed_distributions())
    counts: Counter[tuple[str, str]] = Counter()
    unrecorded = 0
    for cell in cells:
        packages = (cell.meta.get("provenance") or {}).get("packages")
        if not isinstance(packages, dict):
            unrecorded += 1
            continue
        for name, version in packages.items():
            if here.get(_normalize(name)) != version:
                counts[_normalize(name), "not installed" if version is None else str(version)] += 1
    lines = [f"{name}: published {version} ({count} of {len(cells)} cells), here "
             f"{here.get(name, 'not installed')}" for (name, version), count in sorted(counts.items())]
    if unrecorded:
        lines.append(f"{unrecorded} of {len(cells)} cells recorded no package versions")
    return lines


def version_report(folder: Location, cells: list[Cell]) -> list[str]:
    """The lines that compare the published versions with this environment's (a warning at most).

    The published versions are ``FOLDER/constraints.txt``'s where the folder has one, else those the cells
    recorded.

    Args:
        folder: the results folder.
        cells: the cells to rerun.

    Returns:
        A head line (how many versions differ), one line per difference, a line on rebuilding the environment,
        and a warning where versions differ.
    """
    path = folder / CONSTRAINTS
    if path.is_file():
        differences = constraint_differences(path.read_text())
        source = f"{path}, every distribution of the environment that wrote the rows"
        rebuild = f"pip install -c {path} -e . rebuilds that environment"
    else:
        differences = provenance_differences(cells)
        source = (f"the versions the cells recorded ({', '.join(_recorded(cells))}); the folder has no "
                  f"{CONSTRAINTS}")
        rebuild = ("a published folder's pins rebuild its environment: "
                   f"pip install -c FOLDER/{CONSTRAINTS} -e .")
    state = f"{len(differences)} differ here:" if differences else "the same here"
    lines = [f"versions (compared with {source}): {state}", *(f"  {line}" for line in differences)]
    lines.append(f"rows are bit-identical only under the same versions; {rebuild}")
    if differences:
        lines.append("warning: the versions differ, so rows may differ (a warning, not an error)")
    return lines


def _recorded(cells: list[Cell]) -> list[str]:
    """The package names the cells' provenance records."""
    names = {n for c in cells for n in ((c.meta.get("provenance") or {}).get("packages") or {})}
    return sorted(names) or ["none"]


#: What a cell records of its host and code path (:func:`harness.kernels.host_record`), compared.
HOST_FIELDS = (("kernels", "kernels"), ("torch_cpu", "torch's CPU kernels"), ("isa", "instruction set"),
               ("cpu", "CPU"))


def host_report(cells: list[Cell], here: dict[str, str] | None = None,
                vendor: str | None = None) -> list[str]:
    """The lines that compare the hosts and code paths the cells recorded with this process's.

    It gives one line per field that differs, with how many cells recorded each value, and what that means for
    the rerun (a warning at most).

    Args:
        cells: the cells to rerun.
        here: this process's host record (default :func:`harness.kernels.host_record`).
        vendor: this CPU's vendor (default :func:`harness.kernels.cpu_vendor`): the pin holds on Intel's
            (:func:`harness.kernels.other_vendor`).

    Returns:
        A head line, one line per differing field (and one for the cells that recorded no host), and a last
        line on what the rerun can show.
    """
    here = host_record() if here is None else here
    vendor = other_vendor(vendor)
    recorded = [(c.meta.get("provenance") or {}) for c in cells]
    lines, differs = [], []
    for key, name in HOST_FIELDS:
        values = Counter(str(r.get(key)) for r in recorded if r.get(key) is not None)
        others = {v: n for v, n in values.items() if v != here[key]}
        if others:
            differs.append(key)
            published = "; ".join(f"{v} ({n} of {len(cells)} cells)" for v, n in sorted(others.items()))
            lines.append(f"  {name}: published {published}, here {here[key]}")
    unrecorded = sum(1 for r in recorded if r.get("kernels") is None)
    if unrecorded:
        lines.append(f"  {unrecorded} of {len(cells)} cells recorded no CPU or kernels (written before "
                     "cells recorded them)")
    state = f"{len(differs)} differ here:" if differs else "the same here"
    if unrecorded == len(cells):
        state = "unknown:"
    head = f"host (compared with what the cells recorded): {state}"
    if vendor:
        tail = (f"warning: this CPU is not Intel's ({vendor}): MKL keeps its reproducible AVX2 branch "
                "for Intel CPUs, so rows may part from an iteration on even pinned; where bits cannot "
                "match, python -m analysis.recheck checks a claim's statistics")
    elif here["kernels"] == "pinned" and not unrecorded and not differs:
        tail = "pinned here and there: any Intel x86-64 host with AVX2 gives the same bits"
    else:
        tail = ("warning: rows are bit-identical across Intel x86-64 hosts only when both runs are pinned "
                f"(here: {here['kernels']}; there: {_kernels_there(recorded)}); otherwise only on the "
                "same CPU model, and a difference in the last bits grows over a run")
    return [head, *lines, tail]


def _kernels_there(recorded: list[dict]) -> str:
    """How the cells ran, as the cells recorded it: ``pinned``, ``native``, a mix, or unknown."""
    modes = sorted({str(r.get("kernels", "unknown")) for r in recorded})
    return " and ".join(modes)
