"""The registry of problems: a plain dict of names to factories.

To add a problem, write a factory that returns a :class:`problems.base.Problem` (with
``optimum=None``, and its ``source`` and ``deviations`` declared) in a module of this package,
decorate it with :func:`problems.base.registered`, name the module in this file's import of the
problems' modules (one line, the only one outside the module and its test), and run
``python -m problems --write-optima NAME`` to certify its optimum. In a module of its own, the
factory's module docstring (its source, and how the source's conventions map onto this project's) is
the problem's documentation: the site's problems page renders it (``docs/_ext/varbo_generated.py``);
no page needs an edit. The study pages' tables of sources show the declared ``source`` and
``deviations`` (``analysis/sources.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace

from torch import Tensor

# the field's problems' modules, one a line: importing one registers its factories (@registered)
from problems import (  # noqa: F401
    branin_williams,
    hartmann6_splits,
    marzat,
    newsvendor,
    portfolio,
    portfolio_cvucb,
    robot_push,
    yacht,
)
from problems.base import Optimum, Problem, registered_factories
from problems.checks import positive_int
from problems.distributions import ContinuousZ, DiscreteZ, TruncatedNormalZ, gaussian_grid
from problems.optima import load_table, search_problem
from problems.plugins import import_object, is_import_path
from problems.synthetic import branin, goldstein_price, hartmann3

NOISE_STD = 0.1  # noise variance 0.01 on every problem (docs/conventions.md section 2)


# Objectives on [0, 1]-scaled concat([x, z]), maximized; the authors' output scaling
# (docs/conventions.md section 3).
def branin_objective(u: Tensor) -> Tensor:
    """-(B(15 u1 - 5, 15 u2) - 54.81) / 51.95."""
    X = u.new_empty(u.shape)
    X[..., 0] = 15.0 * u[..., 0] - 5.0
    X[..., 1] = 15.0 * u[..., 1]
    return -(branin(X) - 54.81) / 51.95


def goldstein_objective(u: Tensor) -> Tensor:
    """-(ln GP(4 u1 - 2, 4 u2 - 2) - 8.693)."""
    return -(goldstein_price(4.0 * u - 2.0).log() - 8.693)


def hartmann_objective(u: Tensor) -> Tensor:
    """-H3(u1, u2, u3), H3 the standard (negative-valued) Hartmann-3."""
    return -hartmann3(u)


_SYNTHETIC = {
    # name prefix: (d_x, d_z, objective, n_init, description)
    "branin-1-1": (1, 1, branin_objective, 3, "Branin-Hoo, x = u1, z = u2"),
    "goldstein-1-1": (1, 1, goldstein_objective, 3, "Goldstein-Price (log), x = u1, z = u2"),
    "hartmann-1-2": (1, 2, hartmann_objective, 10, "Hartmann-3, x = u1, z = (u2, u3)"),
    "hartmann-2-1": (2, 1, hartmann_objective, 10, "Hartmann-3, x = (u1, u2), z = u3"),
}

#: The paper the synthetic problems are defined in (Z, noise and initial designs in its appendix).
_PAPER = ('Nguyen, Dai, Low & Jaillet, "Value-at-Risk Optimization with Gaussian Processes", ICML 2021, '
          '"Synthetic Benchmark Functions" and appendix "Experimental Details"')
#: The authors' code, where the output scaling of Branin and Goldstein-Price is (it has no Hartmann-3).
_AUTHORS = "`qphong/BayesOpt-LV` (MIT), commit b852a94, `functions.py`"
#: Why no optimum of the authors' is used (docs/conventions.md section 3).
_OPTIMA = ("Its optimum is searched here (`problems/optima.json`), never the authors' stored values, which "
           "are slightly off (Goldstein-Price discrete by about 1.7e-4, the continuous ones by up to 0.15).")
_HARTMANN = ("The paper does not scale Hartmann-3: f = -H3 with BoTorch's standard H3 is this project's "
             "reading (the authors' code has no Hartmann-3 problem).")
#: name prefix: (source, deviations under either Z, deviations under the discrete Z)
_SYNTHETIC_SOURCES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "branin-1-1": (
        f"Branin-Hoo-(1,1) of {_PAPER}; output scaling from {_AUTHORS} `negative_branin_uniform`",
        (_OPTIMA,),
        ("Z as the paper's appendix states it (`linspace(0, 1, 100)`, masses proportional to "
         "exp(-(z - 0.5)^2 / 0.1^2)), where the released `negative_branin_uniform` has 30 equally weighted "
         "points.",)),
    "goldstein-1-1": (
        f"Goldstein-Price-(1,1) of {_PAPER}; output scaling from {_AUTHORS} `negative_goldstein_uniform`",
        (_OPTIMA,),
        ("Z as the paper's appendix states it (`linspace(0, 1, 100)`, masses proportional to "
         "exp(-(z - 0.5)^2 / 0.1^2)), where the released `negative_goldstein_uniform` has 50 equally "
         "weighted points.",)),
    "hartmann-1-2": (
        f"Hartmann-(1,2) of {_PAPER}; Hartmann-3 from BoTorch (`botorch.test_functions.Hartmann`)",
        (_HARTMANN,),
        ("The paper's 64 equidistant points of Z are taken as the grid `linspace(0, 1, 8)^2`, ends "
         "included.",)),
    "hartmann-2-1": (
        f"Hartmann-(2,1) of {_PAPER}; Hartmann-3 from BoTorch (`botorch.test_functions.Hartmann`)",
        (_HARTMANN,),
        ("The paper's 100 equidistant points of Z are taken as `linspace(0, 1, 100)`, ends included.",)),
}
#: The continuous Z's deviation, on every synthetic problem (docs/conventions.md section 2).
_CONTINUOUS_DESIGN = ("The initial design draws z on the support of Z, [0.25, 0.75] per coordinate, where "
                      "the authors' code drew it from U[0, 1].")


def _synthetic_discrete(prefix: str) -> Problem:
    d_x, d_z, objective, n_init, description = _SYNTHETIC[prefix]
    source, deviations, discrete = _SYNTHETIC_SOURCES[prefix]
    z: DiscreteZ = gaussian_grid(100 if d_z == 1 else 8, d_z)
    return Problem(
        name=f"{prefix}-discrete",
        d_x=d_x,
        d_z=d_z,
        z=z,
        alpha=0.1,
        noise_std=NOISE_STD,
        n_init=n_init,
        iterations=60,
        objective=objective,
        description=f"{description}; discrete Z, |Dz| = {z.size}",
        source=source,
        deviations=(*discrete, *deviations),
    )


def _synthetic_continuous(prefix: str) -> Problem:
    d_x, d_z, objective, n_init, description = _SYNTHETIC[prefix]
    source, deviations, _ = _SYNTHETIC_SOURCES[prefix]
    return Problem(
        name=f"{prefix}-continuous",
        d_x=d_x,
        d_z=d_z,
        z=TruncatedNormalZ(d_z),
        alpha=0.1,
        noise_std=NOISE_STD,
        n_init=n_init,
        iterations=60,
        objective=objective,
        description=f"{description}; Z ~ N(0.5, 0.125^2) per coordinate, truncated to [0.25, 0.75]",
        # log GP has sharp dips in z: 4097 nodes leave 4e-6 of quadrature error, 16385 6e-8
        quadrature_nodes=16385 if prefix == "goldstein-1-1" else None,
        source=source,
        deviations=(_CONTINUOUS_DESIGN, *deviations),
    )


#: The factory of every registered problem, in the registry's order: the synthetic problems (this
#: module's own), then the others in the order their modules registered them (each module holds its
#: source and its mapping; its factories are decorated with :func:`problems.base.registered`). Each
#: names its problem once, in the Problem it builds.
_FACTORIES: tuple[Callable[[], Problem], ...] = (
    *(functools.partial(_synthetic_discrete, prefix) for prefix in _SYNTHETIC),
    *(functools.partial(_synthetic_continuous, prefix) for prefix in _SYNTHETIC),
    *registered_factories(),
)
#: Every registered problem, by the name its factory gives it (building one reads no data: that
#: waits until f is evaluated, so this costs a few milliseconds at import).
PROBLEMS: dict[str, Callable[[], Problem]] = {factory().name: factory for factory in _FACTORIES}


def _optimum_from_entry(entry: dict) -> Optimum:
    """The :class:`Optimum` of an entry of the table (or of a search), None where a target is not
    in it; ``lower_bound`` if the entry or its target says so (the CVaR of a simulated problem)."""
    def value(target: str) -> float | None:
        return entry[target]["value"] if target in entry else None

    def argmax(target: str) -> tuple[float, ...] | None:
        return tuple(entry[target]["argmax"]) if target in entry else None

    return Optimum(
        var=value("var"), argmax_var=argmax("var"),
        worst_case=value("worst_case"), argmax_worst_case=argmax("worst_case"),
        lower_bound=bool(entry.get("lower_bound", False)),
        cvar=value("cvar"), argmax_cvar=argmax("cvar"),
        mean=value("mean"), argmax_mean=argmax("mean"),
    )


def check_problem(key: str, problem: object) -> Problem:
    """``problem`` if it is a :class:`Problem` the runner can use, else a one-line ``ValueError``
    naming ``key``: dimensions that match its Z, alpha in (0, 1), a non-negative noise and overhead,
    at least one initial point and one iteration, a callable objective."""
    if not isinstance(problem, Problem):
        raise ValueError(f"problem {key!r} is of type {type(problem).__name__}, not a problems.Problem "
                         "(nor a function of no arguments that returns one)")
    where = f"problem {key!r}"
    positive_int(where, "d_x", problem.d_x)
    if not isinstance(problem.z, DiscreteZ | ContinuousZ):
        raise ValueError(f"{where}: z must be a problems.DiscreteZ, TruncatedNormalZ or UniformZ, "
                         f"got {type(problem.z).__name__}")
    if problem.z.d_z != problem.d_z:
        raise ValueError(f"{where}: d_z is {problem.d_z} but its Z has dimension {problem.z.d_z}")
    if not 0.0 < problem.alpha < 1.0:
        raise ValueError(f"{where}: alpha must lie in (0, 1), got {problem.alpha!r}")
    if not problem.noise_std >= 0.0:
        raise ValueError(f"{where}: noise_std must be >= 0, got {problem.noise_std!r}")
    for field in ("n_init", "iterations", "noise_draws"):
        positive_int(where, field, getattr(problem, field))
    if problem.simulator is not None and not callable(problem.simulator):
        raise ValueError(f"{where}: simulator must be callable or None")
    if not problem.overhead_seconds >= 0.0:
        raise ValueError(f"{where}: overhead_seconds must be >= 0, got {problem.overhead_seconds!r}")
    if not callable(problem.objective):
        raise ValueError(f"{where}: objective must be callable, got {problem.objective!r}")
    return problem


def problem_factory(name: str) -> Callable[[], Problem]:
    """What builds problem ``name``: the registry's factory, or for an import path ``MODULE:ATTR``
    (:mod:`problems.plugins`) the user's object: a :class:`Problem`, or a function of no arguments
    returning one. One-line ``ValueError`` (``KeyError`` for an unknown registry name) otherwise."""
    if name in PROBLEMS:
        return PROBLEMS[name]
    if not is_import_path(name):
        raise KeyError(f"unknown problem {name!r}; valid: {', '.join(PROBLEMS)}, "
                       "or an import path MODULE:ATTR")
    target = import_object(name, "problem")
    if isinstance(target, Problem):
        return lambda: target
    if not callable(target) or isinstance(target, type):
        raise ValueError(f"problem {name!r} is of type {type(target).__name__}, not a problems.Problem "
                         "(nor a function of no arguments that returns one)")
    return target  # type: ignore[return-value]


@functools.lru_cache(maxsize=32)
def _user_problem(name: str) -> Problem:
    """The problem an import path builds, checked and named by the path (built once a process:
    the grid asks for it once a cell, and a user's factory may load data)."""
    factory = problem_factory(name)
    try:
        built = factory()
    except Exception as error:  # the user's factory raised: its reason, one line
        reason = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise ValueError(f"problem {name!r}: building it raised {type(error).__name__}"
                         + (f": {reason}" if reason else "")) from None
    return replace(check_problem(name, built), name=name)


def with_own_search() -> tuple[str, ...]:
    """The registered problems that search their optimum themselves
    (:attr:`problems.base.Problem.optimum_search`), in the registry's order."""
    return tuple(name for name, factory in PROBLEMS.items() if factory().optimum_search is not None)


def build_problem(name: str, with_optimum: bool = True) -> Problem:
    """Problem ``name``: a registered one, with its certified optimum from ``optima.json``, or the
    problem an import path builds (:func:`problem_factory`), named by that path (its seeds derive from
    it) and with the optimum it declares: ``optimum=None`` declares it unknown (regret is then null).
    """
    if name not in PROBLEMS:
        problem = _user_problem(name)
        return problem if with_optimum else replace(problem, optimum=None)
    problem = PROBLEMS[name]()
    if not with_optimum:
        return problem
    entry = load_table().get(name)
    if entry is None or entry["alpha"] != problem.alpha:
        raise LookupError(f"no certified optimum for {name!r}; run: python -m problems "
                          f"--write-optima {name}")
    return replace(problem, optimum=_optimum_from_entry(entry))


@functools.cache
def z_kind_of(name: str) -> str:
    """``"discrete"`` or ``"continuous"``: the kind of the registered problem's Z, read from its
    Z (never from its name)."""
    return "discrete" if build_problem(name, with_optimum=False).z.is_discrete else "continuous"


@functools.lru_cache(maxsize=64)
def get_problem(name: str, alpha: float | None = None, risk: str = "var") -> Problem:
    """Problem ``name`` at risk level ``alpha`` (default: the problem's), with the optimum at that alpha.

    At the default alpha the optimum comes from the committed table. Below the smallest mass of a
    discrete Z, VaR and CVaR are the minimum over the support, so both optima are the worst-case
    target. Otherwise it is computed by the same search as the table (seconds to a minute) and
    memoized: the worst case and the optimum of ``risk`` (``"var"`` or ``"cvar"``; the other is
    left unknown).
    """
    problem = build_problem(name)
    if alpha is None or alpha == problem.alpha:
        return problem
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    if problem.optimum is None:
        return replace(problem, alpha=alpha)  # unknown at the problem's alpha, unknown at this one
    if isinstance(problem.z, DiscreteZ) and alpha <= problem.z.min_mass:
        best = problem.optimum
        optimum = Optimum(best.worst_case, best.argmax_worst_case, best.worst_case,
                          best.argmax_worst_case, best.lower_bound, best.worst_case,
                          best.argmax_worst_case, best.mean, best.argmax_mean)  # the mean has no alpha
    elif name not in PROBLEMS:
        # a user's problem declares its optimum at its own alpha; at another one it is unknown
        # unless the user searches for it (python -m problems --search-optimum, stated accuracy)
        optimum = None
    else:
        entry = search_problem(problem, alpha, targets=tuple(dict.fromkeys((risk, "worst_case"))))
        optimum = _optimum_from_entry(entry)
        if problem.optimum.mean is not None:  # the expectation does not depend on alpha
            optimum = replace(optimum, mean=problem.optimum.mean, argmax_mean=problem.optimum.argmax_mean)
    return replace(problem, alpha=alpha, optimum=optimum)
