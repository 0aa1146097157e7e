"""Grids as data: named grids (the engine's ``smoke``, the studies' own) and user grid files, expanded
into cell specs.

A grid is a list of :class:`~harness.cell.CellSpec`. Its cells may name problems or algorithms that
are not registered yet (a study's grid may name every figure's cells from the start); such a cell is
"not available": it is listed, never silently dropped, and it runs once its problem and algorithm
exist (same spec, same hash, so a finished cell is still recognised).

A grid file is TOML (see docs/how-to/own-study.md)::

    name = "my-grid"           # optional, default: the file's stem
    seeds = 3                  # 3 means seeds 0, 1, 2; or an explicit list [0, 4, 7]
    iterations = 20            # optional; default: each problem's

    [[cells]]
    problems = ["PROBLEM"]
    algorithms = ["ALGORITHM", "OTHER_ALGORITHM"]
    alpha = 0.05               # or "below-min-mass" (half the smallest mass of a discrete Z)
    iterations = 10            # per-block overrides of seeds / iterations
    options = { NAME = "VALUE" }   # algorithm options; a list, NAME = ["A", "B"], is one cell per value

Options are checked against each algorithm's declaration (:mod:`algorithms.options`) before anything
runs; lists expand as :func:`~harness.grid_values.option_sets` says.

Grid files are parsed here, their values checked by :mod:`harness.grid_values`; the cells and the
:class:`Grid` value are :mod:`harness.grid_cells`'s, the cost estimates :mod:`harness.estimates`'s.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from algorithms import ALGORITHMS, algorithm_factory, supports
from algorithms.gp import DEFAULT_GP
from harness.grid_cells import BELOW_MIN_MASS, Grid, GridError, cell_block
from harness.grid_cells import select as select  # documented as harness.grid's (docs/reference/api.md)
from harness.grid_values import (
    MAX_CELLS,
    MAX_SEEDS,
    check_alpha,
    check_gp,
    check_iterations,
    check_names,
    check_options,
    check_options_table,
    check_risk,
    check_seeds,
    option_sets,
)
from harness.spec import RISKS, CellSpec
from harness.study import installed_studies, load_study
from problems import PROBLEMS, build_problem
from problems.measures import DEFAULT_RISK

SMOKE_SEEDS = 2
SMOKE_ITERATIONS = 3


def smoke_options(algorithm: str, continuous: bool) -> dict | None:
    """The smoke grid's options of ``algorithm`` on a problem with a continuous Z or not.

    They are the reduced search effort its class declares (:meth:`algorithms.Algorithm.reduced_options`; the
    estimators are unchanged).

    Args:
        algorithm: the algorithm's name.
        continuous: whether the problem's Z is continuous.

    Returns:
        The options, or None for its defaults or for a name that does not import here.
    """
    try:
        factory = algorithm_factory(algorithm)
    except (KeyError, ValueError):
        return None
    return factory.reduced_options("continuous" if continuous else "discrete")


def smoke_grid() -> Grid:
    """The smoke grid: every registered problem x algorithm that handles it, 2 seeds, 3 iterations.

    An algorithm runs on a problem whose kind of Z it handles, at every risk measure it optimizes
    (:func:`algorithms.supports`), with :func:`smoke_options` for the costly algorithms.

    Returns:
        The grid ``smoke``, its cells risk measure by risk measure, then algorithm, problem and seed.
    """
    problems = {name: build_problem(name, with_optimum=False) for name in PROBLEMS}
    cells = [cell for risk in RISKS for algorithm, factory in ALGORITHMS.items()
             for name, p in problems.items() if supports(factory, p, risk)
             for cell in cell_block([name], [algorithm], range(SMOKE_SEEDS), SMOKE_ITERATIONS,
                                options=smoke_options(algorithm, not p.z.is_discrete), risk=risk)]
    return Grid("smoke", tuple(cells), f"every registered problem x algorithm that handles its Z x "
                f"risk measure it optimizes, {SMOKE_SEEDS} seeds, {SMOKE_ITERATIONS} iterations")


#: The engine's own named grids: name -> factory (factories, so the registries are read when a grid
#: is built). Studies add theirs (:func:`named_grids`), a complexity grid among them
#: (:func:`harness.complexity.complexity_cells` builds its timing cells).
ENGINE_GRIDS: dict[str, Callable[[], Grid]] = {"smoke": smoke_grid}


def named_grids(study: str | None = None) -> dict[str, Callable[[], Grid]]:
    """Every named grid, by name.

    ``study``'s grids come first, then the smoke grid, then the grids of the installed studies
    (:func:`harness.study.installed_studies`, in name order; a grid of a name taken before is left out). Each
    study's grid records the study.

    Args:
        study: a study's name, import path or TOML file (``--study``), whose grids are checked here; None for
            none.

    Returns:
        Grid name -> a function that builds the grid, in the order above.
    """
    grids: dict[str, Callable[[], Grid]] = {}
    if study is not None:  # the user's: checked before anything runs
        grids.update(_study_grids(study, check=True))
    grids.setdefault("smoke", ENGINE_GRIDS["smoke"])
    for name in sorted(installed_studies()):  # listed, not used: checked when a report reads them
        for grid, factory in _study_grids(name, check=False).items():
            grids.setdefault(grid, factory)
    return {**grids, **{k: v for k, v in ENGINE_GRIDS.items() if k not in grids}}


def _study_grids(study: str, check: bool) -> dict[str, Callable[[], Grid]]:
    """A study's grids as factories that record the study; a grid file's table is parsed when built.
    :class:`GridError` for a study that cannot be loaded (or, with ``check``, names what is not)."""
    try:
        declared = load_study(study, check).grids
    except ValueError as error:
        raise GridError(str(error)) from None

    def factory(name: str, value: Callable[[], Grid] | dict) -> Callable[[], Grid]:
        def build() -> Grid:
            grid = parse_grid(value, name) if isinstance(value, dict) else value()
            return replace(grid, study=study)
        return build

    return {name: factory(name, value) for name, value in declared.items()}


# ---------------------------------------------------------------------------------------------------
# grid files

_TOP_KEYS = {"name", "seeds", "iterations", "alpha", "options", "gp", "risk", "cells"}
_BLOCK_KEYS = {"problems", "algorithms", "seeds", "iterations", "alpha", "options", "gp", "risk", "like"}
#: Keys a ``like`` block takes from the grid it names instead.
_LIKE_FIXED = ("iterations", "alpha", "gp", "risk")


def parse_grid(data: dict, name: str) -> Grid:
    """The grid of a parsed grid file.

    Args:
        data: the file as ``tomllib`` returns it.
        name: the grid's name where the file names none (the file's stem).

    Returns:
        The grid, its cells block by block, without a description.

    Raises:
        GridError: an unknown key, a bad name or value, no ``[[cells]]`` table, too many cells, or a cell
            listed twice.
    """
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise GridError(f"unknown key {sorted(unknown)[0]!r}; valid: {', '.join(sorted(_TOP_KEYS))}")
    name = data.get("name", name)
    if (not isinstance(name, str) or not name or "/" in name or "\\" in name or name.startswith((".", "_"))
            or not name.isprintable()):
        raise GridError(f"name must be a plain folder name, got {name!r}")
    defaults = {
        "seeds": check_seeds(data.get("seeds", 1), "seeds"),
        "iterations": check_iterations(data.get("iterations"), "iterations"),
        "alpha": check_alpha(data.get("alpha"), "alpha"),
        "options": check_options_table(data.get("options", {}), "options"),
        "gp": check_gp(data.get("gp", DEFAULT_GP), "gp"),
        "risk": check_risk(data.get("risk", "var"), "risk"),
    }
    blocks = data.get("cells")
    if not isinstance(blocks, list) or not blocks or not all(isinstance(b, dict) for b in blocks):
        raise GridError("the file needs at least one [[cells]] table")
    cells: list[CellSpec] = []
    for i, block in enumerate(blocks, start=1):
        cells += _block_cells(block, defaults, f"[[cells]] #{i}", MAX_CELLS - len(cells))
    duplicates = len(cells) - len(set(cells))
    if duplicates:
        raise GridError(f"the grid lists {duplicates} cell(s) twice")
    return Grid(name, tuple(cells), "")


def _block_cells(block: dict, defaults: dict, where: str, room: int) -> list[CellSpec]:
    """The cells of one ``[[cells]]`` table of a grid file, with the file's ``defaults`` where it
    sets nothing: problems x algorithms x option sets (:func:`option_sets`) x seeds, each option set
    checked (:func:`check_options`); :class:`GridError` past ``room`` cells."""
    unknown = set(block) - _BLOCK_KEYS
    if unknown:
        raise GridError(f"{where}: unknown key {sorted(unknown)[0]!r}; "
                        f"valid: {', '.join(sorted(_BLOCK_KEYS))}")
    if "like" in block:
        return _like_cells(block, defaults, where, room)
    for key in ("problems", "algorithms"):
        if key not in block:
            raise GridError(f"{where}: missing key {key!r}")
    problems = check_names(block["problems"], PROBLEMS, "problem", where)
    algorithms = check_names(block["algorithms"], ALGORITHMS, "algorithm", where)
    seeds = check_seeds(block["seeds"], where) if "seeds" in block else defaults["seeds"]
    iterations = (check_iterations(block["iterations"], where) if "iterations" in block
                  else defaults["iterations"])
    alpha = check_alpha(block["alpha"], where) if "alpha" in block else defaults["alpha"]
    options = {**defaults["options"], **check_options_table(block.get("options", {}), where)}
    gp = check_gp(block["gp"], where) if "gp" in block else defaults["gp"]
    risk = check_risk(block["risk"], where) if "risk" in block else defaults["risk"]
    if alpha == BELOW_MIN_MASS:
        for problem in problems:
            if problem not in PROBLEMS:
                raise GridError(f"{where}: alpha {BELOW_MIN_MASS!r} needs a registered problem, "
                                f"{problem} is not")
    sets = {algorithm: option_sets(options, algorithm, where) for algorithm in algorithms}
    if len(problems) * sum(len(s) for s in sets.values()) * len(seeds) > room:
        raise GridError(f"the grid has more than {MAX_CELLS} cells")
    cells: list[CellSpec] = []
    for problem in problems:
        for algorithm in algorithms:
            for chosen in sets[algorithm]:
                check_options(problem, algorithm, chosen, where, risk)
                cells += cell_block([problem], [algorithm], seeds, iterations, alpha, chosen, gp, risk)
    return cells


def _like_cells(block: dict, defaults: dict, where: str, room: int) -> list[CellSpec]:
    """The cells of a ``like = "GRID"`` block: for every setting (problem, risk measure, alpha, T,
    GP profile) of the named grid's BO cells, with that grid's seeds there (or the block's
    ``seeds``), a cell of each of the block's algorithms that optimizes the setting's measure, with
    the block's options; ``problems`` restricts the settings. :class:`GridError` if bad."""
    name = block["like"]
    grids = named_grids()
    if not isinstance(name, str) or name not in grids:
        raise GridError(f"{where}: like must name a grid ({', '.join(grids)}), got {name!r}")
    fixed = [k for k in _LIKE_FIXED if k in block]
    if fixed:
        raise GridError(f"{where}: {fixed[0]!r} comes from grid {name!r} (like); leave it out")
    if "algorithms" not in block:
        raise GridError(f"{where}: missing key 'algorithms'")
    algorithms = check_names(block["algorithms"], ALGORITHMS, "algorithm", where)
    wanted = set(check_names(block["problems"], PROBLEMS, "problem", where)) if "problems" in block else None
    settings: dict[tuple, list[int]] = {}
    for c in grids[name]().cells:
        if c.kind == "bo" and (wanted is None or c.problem in wanted):
            settings.setdefault((c.problem, c.risk, c.alpha, c.iterations, c.gp), []).append(c.seed)
    if not settings:
        raise GridError(f"{where}: grid {name!r} has no BO cell" + (" on those problems" if wanted else ""))
    options = {**defaults["options"], **check_options_table(block.get("options", {}), where)}
    cells: list[CellSpec] = []
    for algorithm in algorithms:
        mine = [(key, seeds) for key, seeds in settings.items() if _optimizes(algorithm, key[1])]
        if not mine:
            raise GridError(f"{where}: {algorithm} optimizes none of the risk measures of grid {name!r}")
        for (problem, risk, alpha, iterations, gp), seeds in mine:
            seeds = check_seeds(block["seeds"], where) if "seeds" in block else sorted(set(seeds))
            for chosen in option_sets(options, algorithm, where):
                check_options(problem, algorithm, chosen, where, risk)
                cells += [CellSpec.make(problem, algorithm, seed, iterations, alpha, chosen, gp=gp, risk=risk)
                          for seed in seeds]
            if len(cells) > room:
                raise GridError(f"the grid has more than {MAX_CELLS} cells")
    return cells


def load_grid_file(path: Path) -> Grid:
    """Read and validate a TOML grid file.

    Args:
        path: the file.

    Returns:
        The grid (:func:`parse_grid`), named after the file's stem unless it names itself.

    Raises:
        GridError: a file that cannot be read, is not UTF-8 TOML or is not a valid grid, its path named.
    """
    try:
        with open(path, "rb") as file:
            data = tomllib.load(file)
    except OSError as error:
        raise GridError(f"cannot read grid file {path}: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise GridError(f"{path} is not valid TOML: {error}") from None
    except UnicodeDecodeError as error:  # TOML is UTF-8 text
        raise GridError(f"{path} is not UTF-8 text (byte {error.start}): not a TOML grid file") from None
    try:
        return parse_grid(data, path.stem)
    except GridError as error:
        raise GridError(f"{path}: {error}") from None


def resolve_grid(name_or_file: str, study: str | None = None) -> Grid:
    """A named grid, or the grid of a TOML file.

    Args:
        name_or_file: a grid's name (``study``'s first, :func:`named_grids`), or a path (any name ending in
            .toml, or an existing file).
        study: the study given with ``--study``, which a grid file then belongs to.

    Returns:
        The grid.

    Raises:
        GridError: neither a named grid nor a file, or a bad grid file.
    """
    grids = named_grids(study)
    if name_or_file in grids:
        return grids[name_or_file]()
    path = Path(name_or_file)
    if path.suffix == ".toml" or path.exists():
        return replace(load_grid_file(path), study=study or "")
    raise GridError(f"unknown grid {name_or_file!r}: not a named grid ({', '.join(grids)}) "
                    "and no such file")


def with_overrides(grid: Grid, seeds: int | list[int] | None = None, iterations: int | None = None,
                   gp: str | None = None, risk: str | None = None) -> Grid:
    """The grid with the command line's overrides applied.

    Args:
        grid: the grid.
        seeds: ``--seeds N`` (seeds 0..N-1 for every cell group), or a list of seeds, as a grid file's
            ``seeds``.
        iterations: ``--iterations T``, for every cell.
        gp: ``--gp PROFILE``, for every BO cell.
        risk: ``--risk MEASURE``, for every BO cell whose algorithm optimizes it; the others are left out, and
            the grid's description says how many.

    Returns:
        A copy of ``grid`` with its cells overridden (each once, in the grid's order; with seeds, every
        group's seeds in a row) and its description extended where cells were left out.

    Raises:
        GridError: an unknown risk measure or none left by it, a seed count outside 1..MAX_SEEDS, bad seeds,
            or too many cells.
    """
    cells = list(grid.cells)
    description = grid.description
    if risk is not None:
        if risk not in RISKS:
            raise GridError(f"unknown risk measure {risk!r}; valid: {', '.join(RISKS)}")
        kept = [c for c in cells if c.kind != "bo" or _optimizes(c.algorithm, risk)]
        dropped = sorted({c.algorithm for c in cells if c not in kept})
        if not kept:
            raise GridError(f"no cell of grid {grid.name!r} has an algorithm that optimizes {risk}")
        cells = [replace(c, risk=risk) if c.kind == "bo" else c for c in kept]
        if dropped:
            description = (f"{description}; --risk {risk} left out {len(grid.cells) - len(kept)} "
                           f"cells of {', '.join(dropped)} (which do not optimize {risk})").lstrip("; ")
    if isinstance(seeds, int) and not 1 <= seeds <= MAX_SEEDS:
        raise GridError(f"--seeds must lie in 1..{MAX_SEEDS}, got {seeds}")
    seed_list = None if seeds is None else check_seeds(seeds, "--seeds")
    if iterations is not None:
        cells = [replace(c, iterations=iterations) for c in cells]
    if gp is not None:
        cells = [replace(c, gp=gp) if c.kind == "bo" else c for c in cells]
    if seed_list is not None:
        groups = dict.fromkeys(replace(c, seed=0) for c in cells)  # ordered, one per seed family
        if len(groups) * len(seed_list) > MAX_CELLS:
            raise GridError(f"--seeds {seeds} makes {len(groups) * len(seed_list)} cells; "
                            f"at most {MAX_CELLS}")
        cells = [replace(g, seed=s) for g in groups for s in seed_list]
    return replace(grid, cells=tuple(dict.fromkeys(cells)), description=description)


def _optimizes(algorithm: str, risk: str) -> bool:
    """Whether ``algorithm`` (a registry key or an import path) optimizes ``risk``."""
    try:
        return risk in getattr(algorithm_factory(algorithm), "risks", frozenset({DEFAULT_RISK}))
    except (KeyError, ValueError):
        return False  # an unregistered or broken name: running it fails it with its own message

