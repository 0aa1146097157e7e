"""The checks of a grid file's values (seeds, iterations, alpha, options, GP profile, risk measure,
names of problems and algorithms), the option sets an ``options`` table stands for
(:func:`option_sets`), and the caps on a grid's size; :mod:`harness.grid` parses the file with them.
Each check returns the value it accepts or raises a one-line :class:`~harness.grid_cells.GridError`
that says where.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable

from algorithms import ALGORITHMS, algorithm_factory, build_algorithm
from algorithms.gp import GP_PROFILES
from algorithms.options import declared_options, validate_options
from harness.grid_cells import BELOW_MIN_MASS, GridError
from harness.spec import RISKS
from problems import PROBLEMS, build_problem
from problems.checks import positive_int
from problems.plugins import is_import_path

#: Caps that turn a typo (``seeds = 100000000``) into a one-line error instead of a MemoryError.
MAX_SEEDS = 100_000
MAX_CELLS = 1_000_000


def check_seeds(value: object, where: str) -> list[int]:
    """A grid file's ``seeds``: a count N (seeds 0..N-1) or a list of distinct seeds >= 0.

    Args:
        value: the value as read.
        where: where it was read, named in the error.

    Returns:
        The seeds, 0..N-1 for a count, else the list as given.

    Raises:
        GridError: a value that is neither, a count outside 1..MAX_SEEDS, or a list with a negative or
            repeated seed.
    """
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


def check_iterations(value: object, where: str) -> int | None:
    """A grid file's ``iterations``: a count >= 0, or None (each problem's own).

    Args:
        value: the value as read.
        where: where it was read, named in the error.

    Returns:
        The count, or None.

    Raises:
        GridError: a value that is not a count >= 0.
    """
    if value is None:
        return None
    try:
        return positive_int(where, "iterations", value, allow_zero=True)
    except ValueError as error:
        raise GridError(str(error)) from None


def check_alpha(value: object, where: str) -> float | str | None:
    """A grid file's ``alpha``: a number in (0, 1), ``below-min-mass``, or None (each problem's own).

    Args:
        value: the value as read.
        where: where it was read, named in the error.

    Returns:
        The number as a float, :data:`BELOW_MIN_MASS`, or None.

    Raises:
        GridError: any other value.
    """
    if value is None or value == BELOW_MIN_MASS:
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            0.0 < value < 1.0 and math.isfinite(value)):
        raise GridError(f"{where}: alpha must lie in (0, 1) or be {BELOW_MIN_MASS!r}, got {value!r}")
    return float(value)


def check_options_table(value: object, where: str) -> dict:
    """A grid file's ``options`` table.

    Each value is a string, number or boolean, or a non-empty list of them (a sweep, :func:`option_sets`), or
    a list of lists (a sweep of list values).

    Args:
        value: the table as read.
        where: where it was read, named in the error.

    Returns:
        The table itself.

    Raises:
        GridError: a value that is not a table, an empty list, or a value of another type.
    """
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
    """The option sets a grid file's ``options`` table stands for with ``algorithm``.

    There is one set per combination of the values of the options given as lists (their product, in the
    table's order; one set when none is). An option whose value is itself a list (declared with
    ``type=tuple``; no registered algorithm has one) is swept by a list of lists: ``[[1, 2]]`` is the one
    value ``[1, 2]``, ``[[1, 2], [3]]`` two.

    Args:
        options: the checked table (:func:`check_options_table`).
        algorithm: the algorithm the options are for.
        where: where the table was read, named in the error.

    Returns:
        The option sets, each a dict name -> value (an inner list as a tuple).

    Raises:
        GridError: a list of values for an option that takes a list, or a list of lists for one that does not.
    """
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


def check_gp(value: object, where: str) -> str:
    """A grid file's ``gp``: the name of a GP profile.

    Args:
        value: the value as read.
        where: where it was read, named in the error.

    Returns:
        The name.

    Raises:
        GridError: a value that names no GP profile.
    """
    if not isinstance(value, str) or value not in GP_PROFILES:
        raise GridError(f"{where}: gp must be one of {', '.join(GP_PROFILES)}, got {value!r}")
    return value


def check_risk(value: object, where: str) -> str:
    """A grid file's ``risk``: the name of a risk measure.

    Args:
        value: the value as read.
        where: where it was read, named in the error.

    Returns:
        The name.

    Raises:
        GridError: a value that names no risk measure a cell can optimize.
    """
    if not isinstance(value, str) or value not in RISKS:
        raise GridError(f"{where}: risk must be one of {', '.join(RISKS)}, got {value!r}")
    return value


def check_names(value: object, registered: Iterable[str], kind: str, where: str) -> list[str]:
    """A grid file's ``problems`` or ``algorithms``: a name or a non-empty list of names.

    A name is a registered one or an import path MODULE:ATTR that imports here.

    Args:
        value: the value as read.
        registered: the registered names.
        kind: ``"problem"`` or ``"algorithm"``.
        where: where it was read, named in the error.

    Returns:
        The names as a list.

    Raises:
        GridError: a value that is not a name or a non-empty list of names, an unknown name, or an import path
            that does not import as a ``kind``.
    """
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


def check_options(problem: str, algorithm: str, options: dict, where: str, risk: str = "var") -> None:
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

