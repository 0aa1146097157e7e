"""The engine's interface to a study: what a study declares, and how the engine finds one.

A study is a value (:class:`Study`): its name, its claims (typed comparisons on named problems and
algorithms), the algorithms that stand in for another one as a variant of it, named option sets,
the baseline of the report's aggregate view, its grids and figures, and what its complexity timings
are compared with (:class:`Complexity`). The engine (``harness``, ``analysis``) reads studies
through this module only and names none of their problems, algorithms or claims.

A study is found by import path ``MODULE:ATTR`` (like a plug-in problem or algorithm) or by name
among the installed studies: the ``varbo.studies`` entry points of the installed distributions
(this project's own studies are among them; a user's package adds its own in its ``pyproject.toml``)::

    [project.entry-points."varbo.studies"]
    mine = "my_package.study:STUDY"

Comparisons (each is one sub-claim per problem; see :mod:`analysis.claims` for the tests):

* :class:`Beats` ``a`` ends with a lower log10 regret than ``b``;
* :class:`OnPar` ``a`` and ``b`` end within the equivalence margin of each other;
* :class:`SameQueries` ``a`` (below the smallest mass of Z) queries the same (x, z) as ``b``;
* :class:`Cheaper` ``a``'s per-iteration acquisition time is lower than ``b``'s.
"""

from __future__ import annotations

import difflib
import functools
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar

from algorithms import ALGORITHMS
from problems import PROBLEMS
from problems.measures import RISK_MEASURES
from problems.plugins import import_object, is_import_path

#: The entry-point group of installed studies.
ENTRY_POINTS = "varbo.studies"


@dataclass(frozen=True)
class PairComparison:
    """Sub-claims comparing algorithm ``a`` with algorithm ``b``, one per problem of ``problems``,
    on the regret of the risk measure ``target`` (the cells run with ``risk = target``; VaR by
    default); ``kind`` names the test (a subclass's)."""

    problems: tuple[str, ...]
    a: str
    b: str
    target: str = "var"
    kind: ClassVar[str] = ""


class Beats(PairComparison):
    """Sub-claims "``a`` has a lower log10 regret than ``b``", one per problem."""

    kind = "beats"


class OnPar(PairComparison):
    """Sub-claims "``a`` and ``b`` reach log10 regrets within the margin of each other"."""

    kind = "on_par"


class SameQueries(PairComparison):
    """Sub-claims "``a`` at alpha below the smallest mass queries exactly ``b``'s (x, z)"."""

    kind = "same_queries"


@dataclass(frozen=True)
class Cheaper:
    """Sub-claims "``a``'s median per-iteration acquisition time is lower than ``b``'s".

    ``problems`` empty: every problem where ``b`` ran. ``a`` may name several algorithms: each that
    ran on a problem is compared there (the last where none did, to say what is missing)."""

    problems: tuple[str, ...]
    a: tuple[str, ...]
    b: str
    target: str = "var"
    kind = "cheaper"


Comparison = Beats | OnPar | SameQueries | Cheaper


@dataclass(frozen=True)
class Figure:
    """A figure of a study: panels of log10 regret against the iteration, one per problem.

    Attributes:
        name: the file stem (``fig_discrete``).
        title: the figure's title.
        problems: one panel per problem, in this order (row by row).
        shape: (rows, columns) of panels.
        target: the risk measure whose regret the panels show (``var``, ``cvar``, ``worst_case``:
            :mod:`problems.measures`).
        series: the algorithms each panel should show; a panel says which of them it lacks (others
            found in the folder are drawn too).
        always: drawn even when no cell belongs to it (its panels then say "not run"); otherwise only
            when some cell does.
    """

    name: str
    title: str
    problems: tuple[str, ...]
    shape: tuple[int, int]
    target: str
    series: tuple[str, ...] = ()
    always: bool = True


@dataclass(frozen=True)
class Claim:
    """A claim of a study: an id (``M1``), the statement in words, and its comparisons. Its
    verdict is reproduced when every sub-claim is (see :func:`analysis.claims.overall`)."""

    id: str
    statement: str
    comparisons: tuple[Comparison, ...]

    @property
    def headline(self) -> str:
        """The statistic its verdict is read on.

        Returns:
            ``queries`` and ``time`` for a claim whose comparisons are all of those kinds, else ``final`` (the
            final log10 regret).
        """
        kinds = {c.kind for c in self.comparisons}
        if kinds == {"same_queries"}:
            return "queries"
        if kinds == {"cheaper"}:
            return "time"
        return "final"


@dataclass(frozen=True)
class Complexity:
    """What a study compares the timing cells of its complexity grid with (:mod:`analysis.complexity`):
    its methods' cost formulas and their exponents. Methods are named by their labels: an
    algorithm's name (with " (continuous Z)" on a continuous Z unless ``labels`` says otherwise) and
    :data:`analysis.complexity.FIT_METHOD` for the GP fit.

    Attributes:
        formulas: method label -> its cost as a function of (|D|, |Dz|), constants dropped; a
            method without one has no formula slope.
        exponents: (method label, varied size ``"D"`` or ``"Dz"``) -> (the exponent of the formula's
            leading term, that term in words).
        labels: (algorithm, kind of Z) -> the method's label in the tables and figures, where the
            default does not say enough (e.g. which estimator runs on a continuous Z).
        note: what the report's complexity section should add about this study's timings (the
            effort a method is timed at, its candidates), one paragraph; "" for nothing.
    """

    formulas: dict[str, Callable[[float, float], float]] = field(default_factory=dict)
    exponents: dict[tuple[str, str], tuple[float, str]] = field(default_factory=dict)
    labels: dict[tuple[str, str], str] = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True)
class Study:
    """What a study declares.

    Attributes:
        name: the study's name (an entry point's name).
        claims: its claims, in the order they are reported.
        aliases: algorithms that stand in for another one in the claims, tested as a variant of it
            (e.g. a released implementation of a method).
        named_options: option sets named by one word in a variant's name.
        baseline: the algorithm the aggregate view measures every method against ("" for none).
        grids: the study's named grids, name -> a function of no argument that returns a
            :class:`harness.grid.Grid`, or a grid file's table (``python -m harness.run --grid NAME``;
            a folder of one of them is reported with this study unless told otherwise).
        figures: its figures; a panel of results that no figure shows goes to a figure "other".
        colours: algorithms that keep a colour of the palette (its index) in every figure; others
            get the remaining colours by name.
        description: one line.
        complexity: what the timing cells of its complexity grid are compared with (formulas,
            exponents, method labels), or None.
        across_problems: the report draws the views across problems (:mod:`analysis.across`:
            performance profiles, ranks, cost against quality) for it.
        reduced_effort: algorithms the study runs at their declared reduced effort
            (``reduced_options``): their cells at that effort are its default configuration in the
            claims and views, their cells at their defaults the variant ``effort=full``.
        problem_options: problem -> algorithm -> the options the study's grid sets for that
            algorithm on that problem (e.g. a source's sample size there): part of its default
            configuration on that problem, not a variant.
    """

    name: str
    claims: tuple[Claim, ...] = ()
    aliases: dict[str, str] = field(default_factory=dict)
    named_options: dict[str, dict] = field(default_factory=dict)
    baseline: str = ""
    grids: dict[str, Callable[[], object] | dict] = field(default_factory=dict)
    figures: tuple[Figure, ...] = ()
    colours: dict[str, int] = field(default_factory=dict)
    description: str = ""
    complexity: Complexity | None = None
    across_problems: bool = False
    reduced_effort: tuple[str, ...] = ()
    problem_options: dict[str, dict[str, dict]] = field(default_factory=dict)

    def claim(self, claim_id: str) -> Claim:
        """The claim called ``claim_id``.

        Args:
            claim_id: the claim's id.

        Returns:
            The claim.

        Raises:
            KeyError: one line naming the study's claims, where it has no such claim.
        """
        for claim in self.claims:
            if claim.id == claim_id:
                return claim
        raise KeyError(f"study {self.name!r} has no claim {claim_id!r}; "
                       f"it has {', '.join(c.id for c in self.claims) or 'none'}")


#: The study of results that belong to none: no claims, every series on its own.
NO_STUDY = Study("none", description="no study: every series, no claims")


def installed_studies() -> dict[str, str]:
    """The installed studies' names and import paths (the ``varbo.studies`` entry points).

    Returns:
        Entry point name -> its import path ``MODULE:ATTR``.
    """
    return {ep.name: ep.value for ep in metadata.entry_points(group=ENTRY_POINTS)}


def load_study(name: str, check: bool = True) -> Study:
    """The study ``name``.

    Args:
        name: an installed study's name, an import path ``MODULE:ATTR`` to a :class:`Study`, or a TOML file
            (:func:`study_from_toml`).
        check: whether every name it uses is checked (:func:`check_study`).

    Returns:
        The study.

    Raises:
        ValueError: one line, for an unknown name, an import path that does not import or is no
            :class:`Study`, a bad TOML file, or a name it uses that does not exist.
    """
    installed = installed_studies()
    path = installed.get(name, name)
    if path.endswith(".toml") or Path(path).is_file():
        return study_from_toml(Path(path), check)
    if not is_import_path(path):
        raise ValueError(f"unknown study {name!r}; installed: {', '.join(installed) or 'none'}, "
                         "an import path MODULE:ATTR or a .toml file")
    study = import_object(path, "study")
    if not isinstance(study, Study):
        raise ValueError(f"study {name!r} ({path}) is a {type(study).__name__}, not a harness.study.Study")
    return check_study(study) if check else study


#: The comparisons by the ``kind`` a TOML study names them with.
KINDS: dict[str, type] = {c.kind: c for c in (Beats, OnPar, SameQueries, Cheaper)}
_STUDY_KEYS = {"name", "description", "baseline", "grids", "claims", "figures", "aliases", "colours",
               "across_problems", "reduced_effort", "problem_options"}


def _study_table(path: Path) -> dict:
    """The study file's top-level table, its keys checked; a ``ValueError`` of one line otherwise."""
    try:
        data = tomllib.loads(path.read_text())
    except OSError as error:
        raise ValueError(f"study {path}: cannot read it: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"study {path}: not valid TOML: {error}") from None
    unknown = set(data) - _STUDY_KEYS
    if unknown:
        raise ValueError(f"study {path}: unknown key {sorted(unknown)[0]!r}; "
                         f"valid: {', '.join(sorted(_STUDY_KEYS))}")
    return data


def study_from_toml(path: Path, check: bool = True) -> Study:
    """A study written as a TOML file.

    The file reads::

        name = "mine"
        description = "my method against ALGORITHM"
        baseline = "BASELINE"                    # optional: the aggregate view's baseline
        across_problems = true                   # optional: profiles, ranks, cost against quality
        reduced_effort = ["ALGORITHM"]           # optional: run at its declared reduced effort
        [problem_options."PROBLEM"]              # optional: options the grid sets on one problem,
        "ALGORITHM" = { NAME = 10 }              # part of the default configuration there

        [grids.mine]                             # any number of grids, each a grid file's keys
        seeds = [0, 1, 2]
        iterations = 30
        [[grids.mine.cells]]
        problems = ["PROBLEM"]
        algorithms = ["ALGORITHM", "BASELINE", "my_package.algo:Mine"]

        [[claims]]
        id = "M1"
        statement = "my method beats ALGORITHM on PROBLEM"
        comparisons = [{ kind = "beats", problems = ["PROBLEM"],
                         a = "my_package.algo:Mine", b = "ALGORITHM" }]   # target = "cvar": CVaR regret

        [[figures]]                              # optional; panels of no figure go to "other"
        name = "fig_mine"
        title = "PROBLEM: my method against ALGORITHM"
        problems = ["PROBLEM"]
        shape = [1, 1]
        target = "var"
        series = ["ALGORITHM", "my_package.algo:Mine"]

    ``kind`` is one of :data:`KINDS`; a comparison's optional ``target`` names the risk measure whose regret
    it compares (``var`` by default); ``problems`` may be empty for ``cheaper`` (every problem where ``b``
    ran), whose ``a`` may be a list. Grids are kept as their tables and built by the grid parser
    (:func:`harness.grid.parse_grid`) when run.

    Args:
        path: the TOML file.
        check: whether every name it uses is checked (:func:`check_study`).

    Returns:
        The study, named after the file's stem unless it names itself.

    Raises:
        ValueError: one line, for anything wrong (a file that cannot be read or is not TOML, an unknown key, a
            bad value, a name that does not exist).
    """
    data = _study_table(path)
    try:
        claims = _list(data.get("claims", []), "claims")
        figures = _list(data.get("figures", []), "figures")
        study = Study(
            name=_text(data.get("name", path.stem), "name"),
            description=_text(data.get("description", ""), "description"),
            baseline=_text(data.get("baseline", ""), "baseline"),
            grids={str(k): _table(v, f"grid {k}") for k, v in _table(data.get("grids", {}), "grids").items()},
            claims=tuple(_claim(c, i) for i, c in enumerate(claims, 1)),
            figures=tuple(_figure(f, i) for i, f in enumerate(figures, 1)),
            aliases={str(k): _text(v, "aliases")
                     for k, v in _table(data.get("aliases", {}), "aliases").items()},
            colours={str(k): int(v) for k, v in _table(data.get("colours", {}), "colours").items()},
            across_problems=_flag(data.get("across_problems", False), "across_problems"),
            reduced_effort=_names(data.get("reduced_effort", []), "reduced_effort"),
            problem_options={str(p): {str(a): dict(_table(o, f"problem_options.{p}.{a}"))
                                      for a, o in _table(algorithms, f"problem_options.{p}").items()}
                             for p, algorithms in _table(data.get("problem_options", {}),
                                                         "problem_options").items()})
    except (TypeError, ValueError, KeyError) as error:  # a KeyError's str() quotes its message
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        raise ValueError(f"study {path}: {message}") from None
    return check_study(study, str(path)) if check else study


#: What a TOML value of each Python type is called in a one-line error.
_TYPE_WORDS: dict[type, str] = {str: "text", bool: "true or false", dict: "a table",
                               list: "an array of tables"}


def _typed(value: Any, where: str, kind: type) -> Any:
    """``value`` if it is a ``kind`` (a TOML value's Python type), else a one-line ``ValueError``."""
    if not isinstance(value, kind):
        raise ValueError(f"{where} must be {_TYPE_WORDS[kind]}, got {value!r}")
    return value


_text = functools.partial(_typed, kind=str)
_flag = functools.partial(_typed, kind=bool)
_table = functools.partial(_typed, kind=dict)
_list = functools.partial(_typed, kind=list)


def _names(value: object, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where} must be a name or a list of names, got {value!r}")
    return tuple(value)


def _claim(data: object, i: int) -> Claim:
    where = f"claim {i}"
    data = _table(data, where)
    comparisons = []
    for j, c in enumerate(_list(data.get("comparisons", []), f"{where}: comparisons"), 1):
        c = _table(c, f"{where}, comparison {j}")
        kind = c.get("kind")
        if kind not in KINDS:
            raise ValueError(f"{where}, comparison {j}: unknown kind {kind!r}; valid: {', '.join(KINDS)}")
        a = _names(c.get("a"), f"{where}, comparison {j}: a")
        comparisons.append(KINDS[kind](_names(c.get("problems", []), f"{where}, comparison {j}: problems"),
                                       a if kind == "cheaper" else _one(a, f"{where}, comparison {j}: a"),
                                       _one(_names(c.get("b"), f"{where}, comparison {j}: b"),
                                            f"{where}, comparison {j}: b"),
                                       _text(c.get("target", "var"), f"{where}, comparison {j}: target")))
    if not comparisons:
        raise ValueError(f"{where} has no comparisons")
    return Claim(_text(data.get("id", f"C{i}"), f"{where}: id"),
                 _text(data.get("statement", ""), f"{where}: statement"), tuple(comparisons))


def _one(names: tuple[str, ...], where: str) -> str:
    if len(names) != 1:
        raise ValueError(f"{where} must name one algorithm, got {list(names)}")
    return names[0]


def _figure(data: object, i: int) -> Figure:
    where = f"figure {i}"
    data = _table(data, where)
    shape = data.get("shape", [1, len(data.get("problems", [])) or 1])
    if not (isinstance(shape, list) and len(shape) == 2 and all(isinstance(v, int) and v > 0 for v in shape)):
        raise ValueError(f"{where}: shape must be [rows, columns], got {shape!r}")
    return Figure(_text(data.get("name", f"fig_{i}"), f"{where}: name"), _text(data.get("title", ""),
                                                                              f"{where}: title"),
                  _names(data.get("problems", []), f"{where}: problems"), (shape[0], shape[1]),
                  _text(data.get("target", "var"), f"{where}: target"),
                  _names(data.get("series", []), f"{where}: series"), bool(data.get("always", True)))


def check_study(study: Study, where: str | None = None) -> Study:
    """``study``, checked: every problem and algorithm it names exists (registered, or an import path), and
    every figure shows a known risk measure and fits its panels.

    Args:
        study: the study.
        where: how the errors name it (default: its name).

    Returns:
        ``study`` itself.

    Raises:
        ValueError: one line, for the first name or figure that is wrong.
    """
    where = where or study.name
    for claim in study.claims:
        for c in claim.comparisons:
            if c.target not in RISK_MEASURES:
                raise ValueError(f"study {where}, claim {claim.id}: unknown risk measure {c.target!r}; "
                                 f"valid: {', '.join(RISK_MEASURES)}")
            for problem in c.problems:
                _known(problem, PROBLEMS, "problem", f"study {where}, claim {claim.id}")
            for algorithm in (*(c.a if isinstance(c.a, tuple) else (c.a,)), c.b):
                _known(study.aliases.get(algorithm, algorithm), ALGORITHMS, "algorithm",
                       f"study {where}, claim {claim.id}")
    for figure in study.figures:
        if figure.target not in RISK_MEASURES:
            raise ValueError(f"study {where}, figure {figure.name}: unknown risk measure {figure.target!r}; "
                             f"valid: {', '.join(RISK_MEASURES)}")
        if len(figure.problems) > figure.shape[0] * figure.shape[1]:
            raise ValueError(f"study {where}, figure {figure.name}: {len(figure.problems)} problems do not "
                             f"fit {figure.shape[0]} x {figure.shape[1]} panels")
        for problem in figure.problems:
            _known(problem, PROBLEMS, "problem", f"study {where}, figure {figure.name}")
        for algorithm in figure.series:
            _known(algorithm, ALGORITHMS, "series", f"study {where}, figure {figure.name}")
    for algorithm, _ in (study.complexity.labels if study.complexity else {}):
        _known(algorithm, ALGORITHMS, "algorithm", f"study {where}, complexity labels")
    for problem, algorithms in study.problem_options.items():
        _known(problem, PROBLEMS, "problem", f"study {where}, problem_options")
        for algorithm in algorithms:
            _known(algorithm, ALGORITHMS, "algorithm", f"study {where}, problem_options.{problem}")
    return study


def _known(name: str, registry: dict, what: str, where: str) -> None:
    if name not in registry and not is_import_path(name):
        close = difflib.get_close_matches(name, list(registry), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"{where}: unknown {what} {name!r}{hint} (a registered name or an import path "
                         "MODULE:ATTR)")


def study_of_grid(grid: str) -> Study | None:
    """The installed study that declares a grid named ``grid`` (the first, by name; checked).

    Args:
        grid: the grid's name.

    Returns:
        The study, or None where no installed study declares it.
    """
    for name in sorted(installed_studies()):
        if grid in load_study(name, check=False).grids:
            return load_study(name)
    return None
