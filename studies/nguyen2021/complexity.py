"""The paper study's complexity study: which methods its ``complexity`` grid times, and the paper's
cost formulas (Section 3.2) that the report sets the measured slopes against.

The paper states, per BO iteration,

* V-UCB: O(n |Dz| (|D|^2 + log |Dz|)), n the number of x evaluated by the inner optimizer;
* rho-KG^apx: O(n_out |D| K |Dz| (|D|^2 + |Dz| |D| + |Dz|^2 + M |Dz|));

and an exact GP fit costs O(|D|^3) per likelihood evaluation, whatever |Dz|. How the timing cells are
run is the engine's (:mod:`harness.complexity`), how the slopes are fitted too
(:mod:`analysis.complexity`). The cells are the ones the engine's own complexity grid had before it
moved here: same specs, same hashes.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from analysis.complexity import FIT_METHOD
from harness.complexity import SIZES_D, SIZES_Z, complexity_cells
from harness.grid import Grid
from harness.study import Complexity

#: rho-KG^apx is timed at a reduced search effort (the smoke grid's: fewer restarts and raw
#: samples, at most 100 L-BFGS-B iterations). The effort multiplies the number of acquisition
#: evaluations, a constant in |D| and |Dz|, so it moves the curves, not their slopes; at BoRisk's
#: effort one proposal already takes 5-13 s at |Dz| = 100 (docs/explanation/performance.md).
RHOKG_TIMING_OPTIONS = {"restarts_per_dim": 2, "raw_per_restart": 10, "maxiter": 100}
#: (problem, algorithm, options) of every timed method: the discrete-Z methods on Branin-(1,1)'s
#: function with a Gaussian grid of |Dz| points, the continuous-Z V-UCB variants on its continuous
#: version with |Dz| samples of Z per estimate.
METHODS: tuple[tuple[str, str, dict], ...] = (
    ("branin-1-1-discrete", "vucb-prob", {}),
    ("branin-1-1-discrete", "stableopt", {}),
    ("branin-1-1-discrete", "rhokg-apx", RHOKG_TIMING_OPTIONS),
    ("branin-1-1-continuous", "vucb-prob", {}),
    ("branin-1-1-continuous", "vucb-prob-saa", {}),
)


def complexity_grid() -> Grid:
    """Timing cells of :data:`METHODS` (:func:`harness.complexity.complexity_cells`): one
    acquisition step and one GP fit per method, ``|D| x |Dz|``, 5 timed repeats each."""
    cells = tuple(complexity_cells(METHODS))
    return Grid("complexity", cells, "timing cells: GP fit and one proposal over |D| in "
                f"{list(SIZES_D)} x |Dz| in {list(SIZES_Z)}, 5 repeats each "
                "(see studies/nguyen2021/complexity.py)")


#: rho-KG^apx's fantasies K and samples M at BoRisk's settings (they enter its formula).
RHOKG_K = 10
RHOKG_M = 10


def _vucb(d: float, z: float) -> float:
    return z * (d**2 + math.log(z))


#: method label -> the paper's cost formula as a function of (|D|, |Dz|), constants dropped.
PAPER_FORMULAS: dict[str, Callable[[float, float], float]] = {
    "vucb-prob": _vucb,
    "stableopt": _vucb,  # the minimum over Dz replaces the quantile
    "rhokg-apx": lambda d, z: d * RHOKG_K * z * (d**2 + z * d + z**2 + RHOKG_M * z),
    FIT_METHOD: lambda d, z: d**3,
}

#: (method label, varied size) -> (exponent of the leading term, the term it comes from).
PAPER_EXPONENTS: dict[tuple[str, str], tuple[float, str]] = {
    ("vucb-prob", "Dz"): (1.0, "n |Dz| |D|^2 (the log |Dz| of the sort is lower order)"),
    ("vucb-prob", "D"): (2.0, "n |Dz| |D|^2"),
    ("stableopt", "Dz"): (1.0, "as V-UCB: the minimum over Dz replaces the quantile"),
    ("stableopt", "D"): (2.0, "as V-UCB"),
    ("rhokg-apx", "Dz"): (3.0, "n_out |D| K |Dz| |Dz|^2"),
    ("rhokg-apx", "D"): (3.0, "n_out |D| K |Dz| |D|^2"),
    (FIT_METHOD, "D"): (3.0, "a Cholesky factor of the |D| x |D| kernel matrix"),
    (FIT_METHOD, "Dz"): (0.0, "the fit does not see Dz"),
}

#: The continuous-Z V-UCB variants run LNSO, which the label says; the paper gives them no formula
#: (nor vucb-prob-saa, labelled "vucb-prob-saa (continuous Z)" by default).
LABELS: dict[tuple[str, str], str] = {(algorithm, "continuous"): f"{algorithm} (continuous Z, LNSO)"
                                      for algorithm in ("vucb-prob", "vucb-unif")}

COMPLEXITY = Complexity(
    formulas=PAPER_FORMULAS, exponents=PAPER_EXPONENTS, labels=LABELS,
    note="For a discrete Z the candidates of an evaluation are 256 x for the V-UCB family and "
         "StableOpt, 4 (x, w) for rho-KG^apx; rho-KG^apx is timed at a reduced search effort "
         "(a constant factor). 'formula_slope' and 'formula_exponent' are the paper's (Section 3.2).")
