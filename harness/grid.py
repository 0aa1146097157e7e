"""Grids as data: named grids (``smoke``, ``paper``) and user grid files, expanded into cell specs.

A grid is a list of :class:`~harness.cell.CellSpec`. Its cells may name problems or algorithms that
are not registered yet (the paper grid names every figure's cells from the start); such a cell is
"not available": it is listed, never silently dropped, and it runs once its problem and algorithm
exist (same spec, same hash, so a finished cell is still recognised).

A grid file is TOML (see docs/how-to/own-study.md)::

    name = "my-grid"           # optional, default: the file's stem
    seeds = 3                  # 3 means seeds 0, 1, 2; or an explicit list [0, 4, 7]
    iterations = 20            # optional; default: each problem's

    [[cells]]
    problems = ["branin-1-1-discrete"]
    algorithms = ["vucb-prob", "vucb-unif"]
    alpha = 0.05               # or "below-min-mass" (half the smallest mass of a discrete Z)
    iterations = 10            # per-block overrides of seeds / iterations
    options = { beta = "authors" }   # a list, beta = ["paper", "authors"], is one cell per value

Options are checked against each algorithm's declaration (:mod:`algorithms.options`) before anything
runs; lists expand as :func:`option_sets` says.
"""

from __future__ import annotations

import fnmatch
import functools
import itertools
import math
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from algorithms import ALGORITHMS, algorithm_factory, build_algorithm, supports
from algorithms.cost import DEFAULT_ITERATION_S, ProblemSize, iteration_seconds
from algorithms.gp import DEFAULT_GP, GP_PROFILES
from algorithms.options import declared_options, validate_options
from harness.complexity import estimate_timing_seconds
from harness.spec import RISKS, CellSpec
from harness.study import installed_studies, load_study
from problems import PROBLEMS, DiscreteZ, build_problem
from problems.checks import positive_int
from problems.measures import DEFAULT_RISK
from problems.plugins import is_import_path


class GridError(ValueError):
    """A grid that cannot be built (bad file, unknown name, bad value): reported as one line."""


SMOKE_SEEDS = 2
SMOKE_ITERATIONS = 3


def smoke_options(algorithm: str, continuous: bool) -> dict | None:
    """The smoke grid's options of ``algorithm`` on a problem with a continuous Z or not: the reduced
    search effort its class declares (:meth:`algorithms.Algorithm.reduced_options`; the estimators
    are unchanged), None for its defaults or for a name that does not import here."""
    try:
        factory = algorithm_factory(algorithm)
    except (KeyError, ValueError):
        return None
    return factory.reduced_options("continuous" if continuous else "discrete")


BELOW_MIN_MASS = "below-min-mass"


@dataclass(frozen=True)
class Grid:
    """A named list of cells (in a fixed order: the order of the figures, then seeds)."""

    name: str
    cells: tuple[CellSpec, ...]
    description: str = ""
    #: The study that declares the grid (its name, import path or TOML file; "" for none): recorded
    #: with the results, so that the report tests that study's claims.
    study: str = ""


def unavailable_reason(spec: CellSpec) -> str | None:
    """Why ``spec`` cannot run now (its problem or algorithm is not registered, or its import path
    names nothing usable here), or None."""
    missing = []
    if spec.problem not in PROBLEMS:
        if not is_import_path(spec.problem):
            missing.append(f"problem {spec.problem} not registered")
        else:
            try:
                build_problem(spec.problem, with_optimum=False)
            except (KeyError, ValueError) as error:
                missing.append(str(error))
    if spec.algorithm not in ALGORITHMS:
        if not is_import_path(spec.algorithm):
            missing.append(f"algorithm {spec.algorithm} not registered")
        else:
            try:
                algorithm_factory(spec.algorithm)
            except (KeyError, ValueError) as error:
                missing.append(str(error))
    return "; ".join(missing) or None


def cell_label(spec: CellSpec) -> str:
    """``problem/algorithm/seedN``, plus ``risk=cvar``, ``alpha=..``, ``T=..``, ``gp=..`` and
    options when set: what --only matches."""
    label = f"{spec.problem}/{spec.algorithm}/seed{spec.seed}"
    extras = []
    if spec.risk != DEFAULT_RISK:
        extras.append(f"risk={spec.risk}")
    if spec.alpha is not None:
        extras.append(f"alpha={spec.alpha:.4g}")
    if spec.iterations is not None:
        extras.append(f"T={spec.iterations}")
    if spec.gp != DEFAULT_GP:
        extras.append(f"gp={spec.gp}")
    extras += [f"{name}={value}" for name, value in spec.options]
    return " ".join([label, *extras])


def alpha_below_min_mass(problem_name: str) -> float:
    """Half the smallest mass of the problem's discrete Z: VaR becomes the worst case (alpha -> 0)."""
    problem = build_problem(problem_name, with_optimum=False)
    if not isinstance(problem.z, DiscreteZ):
        raise GridError(f"alpha {BELOW_MIN_MASS!r} needs a discrete Z; {problem_name} has a continuous one")
    return problem.z.min_mass / 2


def cell_block(problems: Iterable[str], algorithms: Iterable[str], seeds: Iterable[int],
           iterations: int | dict[str, int] | None = None, alpha: float | str | None = None,
           options: dict | None = None, gp: str = DEFAULT_GP, risk: str = "var") -> list[CellSpec]:
    """The cells of problems x algorithms x seeds (seeds innermost), with shared settings."""
    cells = []
    for problem in problems:
        t = iterations.get(problem) if isinstance(iterations, dict) else iterations
        a = alpha_below_min_mass(problem) if alpha == BELOW_MIN_MASS else alpha
        for algorithm in algorithms:
            cells += [CellSpec.make(problem, algorithm, seed, t, a, options, gp=gp, risk=risk)
                      for seed in seeds]
    return cells


def smoke_grid() -> Grid:
    """Every registered problem x every registered algorithm that handles its kind of Z x every risk
    measure it optimizes (:func:`algorithms.supports`) x 2 seeds x 3 iterations (with
    :func:`smoke_options` for the costly algorithms)."""
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
    """Every named grid: ``study``'s (a study's name, import path or TOML file: ``--study``) first,
    then the smoke grid, then the grids of the installed studies
    (:func:`harness.study.installed_studies`, in name order; a grid of a name taken before is left
    out). Each study's grid records the study."""
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


#: Caps that turn a typo (``seeds = 100000000``) into a one-line error instead of a MemoryError.
MAX_SEEDS = 100_000
MAX_CELLS = 1_000_000


def _seeds(value: object, where: str) -> list[int]:
    if isinstance(value, bool):
        raise GridError(f"{where}: seeds must be a count or a list of integers, got {value!r}")
    if isinstance(value, int):
        if value < 1:
            raise GridError(f"{where}: seeds must be >= 1, got {value}")
        if value > MAX_SEEDS:
            raise GridError(f"{where}: seeds must be at most {MAX_SEEDS}, got {value}")
        return list(range(value))
    if isinstance(value, list) and value and all(isinstance(s, int) and not isinstance(s, bool)
                                                 for s in value):
        if min(value) < 0 or len(set(value)) != len(value):
            raise GridError(f"{where}: seeds must be distinct integers >= 0, got {value}")
        return list(value)
    raise GridError(f"{where}: seeds must be a count or a non-empty list of integers, got {value!r}")


def _iterations(value: object, where: str) -> int | None:
    if value is None:
        return None
    try:
        return positive_int(where, "iterations", value, allow_zero=True)
    except ValueError as error:
        raise GridError(str(error)) from None


def _alpha(value: object, where: str) -> float | str | None:
    if value is None or value == BELOW_MIN_MASS:
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            0.0 < value < 1.0 and math.isfinite(value)):
        raise GridError(f"{where}: alpha must lie in (0, 1) or be {BELOW_MIN_MASS!r}, got {value!r}")
    return float(value)


def _options(value: object, where: str) -> dict:
    """A grid file's ``options`` table: each value a string, number or boolean, or a non-empty list
    of them (a sweep, :func:`option_sets`), or a list of lists (a sweep of list values)."""
    if not isinstance(value, dict):
        raise GridError(f"{where}: options must be a table, got {value!r}")
    for key, option in value.items():
        values = option if isinstance(option, list) else [option]
        if not values:
            raise GridError(f"{where}: option {key!r} lists no values (a list is one cell per value)")
        for item in values:
            if not isinstance(item, str | int | float | list):  # bool is an int
                raise GridError(f"{where}: option {key!r} must be a string, number or boolean, or a "
                                f"list of them (one cell per value), got {option!r}")
    return value


def _takes_lists(algorithm: str, name: str) -> bool:
    """Whether ``algorithm`` (a registered or importable one) declares option ``name`` as a list."""
    if algorithm not in ALGORITHMS and not is_import_path(algorithm):
        return False  # not registered here: its declaration is not known
    try:
        declared = {o.name: o for o in declared_options(algorithm_factory(algorithm))}
    except (KeyError, ValueError):
        return False
    return name in declared and declared[name].type is tuple


def option_sets(options: dict, algorithm: str, where: str) -> list[dict]:
    """The option sets a grid file's ``options`` table stands for with ``algorithm``: one per
    combination of the values of the options given as lists (their product, in the table's order;
    one set when none is). An option whose value is itself a list (declared with ``type=tuple``; no
    registered algorithm has one) is swept by a list of lists: ``[[1, 2]]`` is the one value
    ``[1, 2]``, ``[[1, 2], [3]]`` two."""
    axes = []
    for name, value in options.items():
        if not isinstance(value, list):
            axes.append([(name, value)])
            continue
        nested = [isinstance(v, list) for v in value]
        if _takes_lists(algorithm, name) and not all(nested):
            raise GridError(f"{where}: option {name!r} of {algorithm} takes a list: give a list of lists, "
                            f"one cell per inner list ([[1, 2]] for the one value [1, 2]), got {value!r}")
        if not _takes_lists(algorithm, name) and any(nested):
            raise GridError(f"{where}: option {name!r} of {algorithm} takes one value, not a list: "
                            f"a list gives one cell per value, got {value!r}")
        axes.append([(name, tuple(v) if isinstance(v, list) else v) for v in value])
    return [dict(combination) for combination in itertools.product(*axes)]


def _gp(value: object, where: str) -> str:
    if not isinstance(value, str) or value not in GP_PROFILES:
        raise GridError(f"{where}: gp must be one of {', '.join(GP_PROFILES)}, got {value!r}")
    return value


def _risk(value: object, where: str) -> str:
    if not isinstance(value, str) or value not in RISKS:
        raise GridError(f"{where}: risk must be one of {', '.join(RISKS)}, got {value!r}")
    return value


def _names(value: object, registered: Iterable[str], kind: str, where: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise GridError(f"{where}: {kind}s must be a non-empty list of names, got {value!r}")
    valid = list(registered)
    for name in value:
        if is_import_path(name):  # the user's own: it must import and be of the right kind now
            try:
                if kind == "problem":
                    build_problem(name, with_optimum=False)
                else:
                    algorithm_factory(name)
            except (KeyError, ValueError) as error:
                raise GridError(f"{where}: {error}") from None
        elif name not in valid:
            raise GridError(f"{where}: unknown {kind} {name!r}; valid: {', '.join(valid)}, "
                            "or an import path MODULE:ATTR")
    return value


def _check_options(problem: str, algorithm: str, options: dict, where: str, risk: str = "var") -> None:
    """Check the options' names, types and ranges as the algorithm declares them
    (:func:`algorithms.options.validate_options`), then build it once, so that bad options (or a risk
    measure it does not optimize) fail before anything runs."""
    known = (problem in PROBLEMS or is_import_path(problem)) and (
        algorithm in ALGORITHMS or is_import_path(algorithm))
    if not known:
        return  # not registered here: its cells are not available, checked when it exists
    try:
        factory = algorithm_factory(algorithm)
        validate_options(algorithm, factory, options)
        built = build_problem(problem, with_optimum=False)
        build_algorithm(algorithm, factory, built, 0, risk=risk, **options)
    except (TypeError, ValueError) as error:
        raise GridError(f"{where}: {algorithm} on {problem}: {error}") from None


def parse_grid(data: dict, name: str) -> Grid:
    """The grid of a parsed grid file (a dict as ``tomllib`` returns it); :class:`GridError` if bad."""
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise GridError(f"unknown key {sorted(unknown)[0]!r}; valid: {', '.join(sorted(_TOP_KEYS))}")
    name = data.get("name", name)
    if (not isinstance(name, str) or not name or "/" in name or "\\" in name or name.startswith((".", "_"))
            or not name.isprintable()):
        raise GridError(f"name must be a plain folder name, got {name!r}")
    defaults = {
        "seeds": _seeds(data.get("seeds", 1), "seeds"),
        "iterations": _iterations(data.get("iterations"), "iterations"),
        "alpha": _alpha(data.get("alpha"), "alpha"),
        "options": _options(data.get("options", {}), "options"),
        "gp": _gp(data.get("gp", DEFAULT_GP), "gp"),
        "risk": _risk(data.get("risk", "var"), "risk"),
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
    checked (:func:`_check_options`); :class:`GridError` past ``room`` cells."""
    unknown = set(block) - _BLOCK_KEYS
    if unknown:
        raise GridError(f"{where}: unknown key {sorted(unknown)[0]!r}; "
                        f"valid: {', '.join(sorted(_BLOCK_KEYS))}")
    if "like" in block:
        return _like_cells(block, defaults, where, room)
    for key in ("problems", "algorithms"):
        if key not in block:
            raise GridError(f"{where}: missing key {key!r}")
    problems = _names(block["problems"], PROBLEMS, "problem", where)
    algorithms = _names(block["algorithms"], ALGORITHMS, "algorithm", where)
    seeds = _seeds(block["seeds"], where) if "seeds" in block else defaults["seeds"]
    iterations = _iterations(block["iterations"], where) if "iterations" in block else defaults["iterations"]
    alpha = _alpha(block["alpha"], where) if "alpha" in block else defaults["alpha"]
    options = {**defaults["options"], **_options(block.get("options", {}), where)}
    gp = _gp(block["gp"], where) if "gp" in block else defaults["gp"]
    risk = _risk(block["risk"], where) if "risk" in block else defaults["risk"]
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
                _check_options(problem, algorithm, chosen, where, risk)
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
    algorithms = _names(block["algorithms"], ALGORITHMS, "algorithm", where)
    wanted = set(_names(block["problems"], PROBLEMS, "problem", where)) if "problems" in block else None
    settings: dict[tuple, list[int]] = {}
    for c in grids[name]().cells:
        if c.kind == "bo" and (wanted is None or c.problem in wanted):
            settings.setdefault((c.problem, c.risk, c.alpha, c.iterations, c.gp), []).append(c.seed)
    if not settings:
        raise GridError(f"{where}: grid {name!r} has no BO cell" + (" on those problems" if wanted else ""))
    options = {**defaults["options"], **_options(block.get("options", {}), where)}
    cells: list[CellSpec] = []
    for algorithm in algorithms:
        mine = [(key, seeds) for key, seeds in settings.items() if _optimizes(algorithm, key[1])]
        if not mine:
            raise GridError(f"{where}: {algorithm} optimizes none of the risk measures of grid {name!r}")
        for (problem, risk, alpha, iterations, gp), seeds in mine:
            seeds = _seeds(block["seeds"], where) if "seeds" in block else sorted(set(seeds))
            for chosen in option_sets(options, algorithm, where):
                _check_options(problem, algorithm, chosen, where, risk)
                cells += [CellSpec.make(problem, algorithm, seed, iterations, alpha, chosen, gp=gp, risk=risk)
                          for seed in seeds]
            if len(cells) > room:
                raise GridError(f"the grid has more than {MAX_CELLS} cells")
    return cells


def load_grid_file(path: Path) -> Grid:
    """Read and validate a TOML grid file."""
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
    """A named grid (``study``'s first: :func:`named_grids`), or the grid of a TOML file (a path,
    or any name ending in .toml; it belongs to ``study`` when one is given)."""
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
    """``--seeds N`` (seeds 0..N-1 for every cell group; or a list of seeds, as a grid file's
    ``seeds``), ``--iterations T``, ``--gp PROFILE``
    (every cell) and ``--risk MEASURE`` (every BO cell whose algorithm optimizes it; the others are
    left out, and the grid's description says how many; :class:`GridError` if none is left)."""
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
                           f"cells of {', '.join(dropped)} (VaR only)").lstrip("; ")
    if isinstance(seeds, int) and not 1 <= seeds <= MAX_SEEDS:
        raise GridError(f"--seeds must lie in 1..{MAX_SEEDS}, got {seeds}")
    seed_list = None if seeds is None else _seeds(seeds, "--seeds")
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


def select(cells: Iterable[CellSpec], pattern: str) -> list[CellSpec]:
    """Cells whose :func:`cell_label` matches ``pattern``: a glob if it has ``*?[``, else a substring."""
    glob = pattern if any(c in pattern for c in "*?[") else f"*{pattern}*"
    return [c for c in cells if fnmatch.fnmatchcase(cell_label(c), glob)]


# ---------------------------------------------------------------------------------------------------
# cost

#: Seconds of a cell besides its iterations (building the problem and the model, the initial design).
_FIXED_S = 1.0
#: The harness's own seconds an iteration on one of 2 busy cores (the GP update, the recommendation's
#: regret against the true objective) where the problem does not build here; a problem declares its
#: own (:attr:`problems.Problem.overhead_seconds`: random search's measured rate, whose proposals cost
#: nothing).
_HARNESS_S = 0.05
#: The size assumed for a problem that does not build here (its cells cannot run; a guess).
_UNKNOWN_SIZE = ProblemSize(d_x=1, d_z=1, z_size=100, n_init=10, iterations=60)


@functools.lru_cache(maxsize=256)
def _overhead_seconds(name: str) -> float:
    """The harness's seconds an iteration on problem ``name`` (what it declares), or :data:`_HARNESS_S`."""
    try:
        return build_problem(name, with_optimum=False).overhead_seconds
    except (KeyError, ValueError):
        return _HARNESS_S


@functools.lru_cache(maxsize=256)
def _problem_size(name: str, iterations: int) -> ProblemSize:
    """The size of problem ``name`` run for ``iterations``, or :data:`_UNKNOWN_SIZE`."""
    try:
        return ProblemSize.of(build_problem(name, with_optimum=False), iterations)
    except (KeyError, ValueError):
        return replace(_UNKNOWN_SIZE, iterations=iterations)


def declared_rate(spec: CellSpec) -> float:
    """Seconds an iteration of a BO cell from what its algorithm declares
    (:func:`algorithms.cost.iteration_seconds`, its options' defaults filled in) plus the harness's
    share, which its problem declares (:attr:`problems.Problem.overhead_seconds`);
    :data:`algorithms.cost.DEFAULT_ITERATION_S` for an algorithm that does not import here."""
    size = replace(_problem_size(spec.problem, cell_iterations(spec)), risk=spec.risk)
    try:
        factory = algorithm_factory(spec.algorithm)
    except (KeyError, ValueError):
        factory = None
    seconds = iteration_seconds(factory, size, dict(spec.options)) if factory else DEFAULT_ITERATION_S
    return _overhead_seconds(spec.problem) + seconds


def measured_rate(spec: CellSpec, measured: Mapping[tuple, float]) -> float | None:
    """Seconds an iteration of ``spec`` from ``measured`` (seconds an iteration of finished cells by
    (problem, algorithm, options), as :func:`harness.grid_cli` reads them; a key (problem,
    algorithm) stands for the default options): the rate of cells with the same options, else one
    with other options scaled by the declared model (:func:`declared_rate`), else the declared rate
    scaled by how far the algorithm's finished cells on other problems were from theirs
    (:func:`_calibration`), else None."""
    same = measured.get((spec.problem, spec.algorithm, spec.options))
    if same is None and not spec.options:
        same = measured.get((spec.problem, spec.algorithm))
    if same is not None:
        return same
    for key, rate in measured.items():
        if key[:2] == (spec.problem, spec.algorithm):
            return rate * declared_rate(spec) / declared_rate(_spec_of(spec, key))
    factor = _calibration(spec, measured)
    return None if factor is None else factor * declared_rate(spec)


def _calibration(spec: CellSpec, measured: Mapping[tuple, float]) -> float | None:
    """The geometric mean of measured / declared seconds an iteration over the finished cells of
    ``spec``'s algorithm on other problems (None if there are none): the declared cost model is off
    by a factor that depends more on the machine and the load than on the problem, so a grid that
    has run an algorithm on one problem prices it better on the next (the cvar grid's botorch-risk
    cells ran at 2.7-4.0 times their declared rate)."""
    logs = [math.log(rate / declared_rate(_spec_of(spec, key)))
            for key, rate in measured.items() if key[1] == spec.algorithm and rate > 0]
    return math.exp(sum(logs) / len(logs)) if logs else None


def _spec_of(spec: CellSpec, key: tuple) -> CellSpec:
    """``spec`` on the problem and options of a key of the measured rates ((problem, algorithm) or
    (problem, algorithm, options); the short key stands for the default options)."""
    return replace(spec, problem=key[0], options=key[2] if len(key) > 2 else ())


def _problem_iterations(name: str) -> int:
    """The problem's default number of iterations (60 for an import path that no longer builds:
    the estimate is a guess, and the cell reports its own error when it runs)."""
    try:
        return build_problem(name, with_optimum=False).iterations
    except (KeyError, ValueError):
        return 60


def cell_iterations(spec: CellSpec) -> int:
    """The BO iterations a cell runs: its own, else its problem's (60, a guess for the estimate, for
    a problem that is not registered here)."""
    if spec.iterations is not None:
        return spec.iterations
    if spec.problem in PROBLEMS or is_import_path(spec.problem):
        return _problem_iterations(spec.problem)
    return 60


def estimate_seconds(spec: CellSpec, measured: Mapping[tuple, float] | None = None) -> float:
    """Estimated single-core seconds of a cell: a fixed part and its iterations at the rate
    ``measured`` gives (:func:`measured_rate`: seconds an iteration of finished cells), else at the
    rate its algorithm declares (:func:`declared_rate`)."""
    if spec.kind == "timing":
        return estimate_timing_seconds(spec)
    rate = measured_rate(spec, measured) if measured else None
    return _FIXED_S + (declared_rate(spec) if rate is None else rate) * cell_iterations(spec)
