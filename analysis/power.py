"""Multiplicity and power for the claims table: Holm's step-down adjustment within a claim, and the
power of a sub-claim's own signed-rank test by seeded Monte Carlo.

Power is computed under a normal model of the paired differences d (log10 units) with the observed
mean and standard deviation: it answers "if the effect is what these seeds show, how often would the
test declare it, and how many seeds would it take to declare it 4 times out of 5". It is a planning
figure (which sub-claims more seeds would decide), not evidence: the observed effect of 10 seeds is
itself uncertain. The test is exact: the critical value of the signed-rank statistic W+ comes from its
exact null distribution without ties, so a simulated sample is declared exactly when the report's
own :func:`analysis.signed_rank.signed_rank_p` would be below the level.
"""

from __future__ import annotations

import hashlib
from functools import cache, lru_cache

import numpy as np

from analysis.signed_rank import signed_rank_p, tost_p

#: Monte Carlo draws per power estimate (its standard error is at most 0.5 / sqrt(DRAWS) ~ 0.011).
DRAWS = 2000
#: Power wanted for ``seeds_80``, and the largest number of seeds searched.
TARGET_POWER = 0.8
MAX_SEEDS = 100


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values of one family.

    The i-th smallest of m p-values becomes max_{j <= i} min(1, (m - j + 1) p_(j)); NaN entries are not in the
    family and stay NaN.

    Args:
        p_values: the family's raw p-values, NaN for those not in it.

    Returns:
        A float array of the shape of ``p_values``, the adjusted p-values in the same order.
    """
    p = np.asarray(p_values, dtype=float)
    out = np.full_like(p, np.nan)
    finite = np.flatnonzero(~np.isnan(p))
    m = finite.size
    if m == 0:
        return out
    order = finite[np.argsort(p[finite], kind="stable")]
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(scaled)
    return out


@cache
def lower_critical(n: int, level: float) -> int:
    """The lower critical value of the exact Wilcoxon signed-rank test.

    Args:
        n: the number of untied nonzero differences.
        level: the one-sided level.

    Returns:
        The largest w with P(W+ <= w) <= ``level`` under the null; -1 when even W+ = 0 is too likely (2^-n >
        level: no sample of n can be declared).
    """
    total = n * (n + 1) // 2
    counts = np.zeros(total + 1)
    counts[0] = 1.0
    for r in range(1, n + 1):
        counts[r:] = counts[r:] + counts[: total + 1 - r].copy()
    cdf = np.cumsum(counts / counts.sum())
    below = np.flatnonzero(cdf <= level * (1 + 1e-12))
    return int(below[-1]) if below.size else -1


def _w_plus(d: np.ndarray) -> np.ndarray:
    """W+ of each row of ``d`` (draws x n, continuous draws: no ties, no zeros): the sum of the ranks
    of |d| where d > 0."""
    ranks = np.argsort(np.argsort(np.abs(d), axis=1), axis=1) + 1
    return np.where(d > 0, ranks, 0).sum(axis=1)


def _declared(d: np.ndarray, kind: str, level: float, margin: float) -> np.ndarray:
    """Which rows of ``d`` (draws x n) the test of ``kind`` declares at ``level``: ``beats`` (one-sided,
    d lower), ``on_par`` (TOST within +-margin: both one-sided tests reject)."""
    n = d.shape[1]
    critical, total = lower_critical(n, level), n * (n + 1) // 2
    if kind == "beats":
        return _w_plus(d) <= critical
    if kind == "on_par":
        return (_w_plus(d + margin) >= total - critical) & (_w_plus(d - margin) <= critical)
    raise ValueError(f"no power for a test of kind {kind!r}")


@lru_cache(maxsize=8)
def _normals(name: str) -> np.ndarray:
    """DRAWS x MAX_SEEDS standard normals from a generator seeded by ``name`` (read-only)."""
    seed = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")
    z = np.random.default_rng(seed).standard_normal((DRAWS, MAX_SEEDS))
    z.flags.writeable = False
    return z


def power(mean: float, sd: float, n: int, kind: str, level: float, margin: float, name: str) -> float:
    """P(the test declares the sub-claim) with n seeds, by simulation.

    The paired differences are drawn d ~ N(mean, sd^2) i.i.d., :data:`DRAWS` draws from a generator seeded by
    ``name`` (one sub-claim's draws are common to every n).

    Args:
        mean: the mean of the paired differences.
        sd: their standard deviation (0: every draw is the constant sample).
        n: the number of seeds.
        kind: the test, ``"beats"`` or ``"on_par"``.
        level: the test's level.
        margin: the equivalence margin of ``on_par``.
        name: the sub-claim's name, which seeds the draws.

    Returns:
        The fraction of the draws the test declares, NaN where ``mean`` or ``sd`` is not finite.
    """
    if not (np.isfinite(mean) and np.isfinite(sd)):
        return float("nan")
    if sd == 0:  # every draw is the constant sample (ties: the report's own p-value decides)
        return float(_constant_declared(mean, n, kind, level, margin))
    z = _normals(name)[:, :n]
    return float(_declared(mean + sd * z, kind, level, margin).mean())


def _constant_declared(mean: float, n: int, kind: str, level: float, margin: float) -> bool:
    d = np.full(n, mean)
    p = signed_rank_p(d, "less") if kind == "beats" else tost_p(d, margin)
    return p < level


def seeds_for_power(mean: float, sd: float, kind: str, level: float, margin: float, name: str,
                    target: float = TARGET_POWER) -> float:
    """The fewest seeds (up to :data:`MAX_SEEDS`) at which :func:`power` reaches ``target``.

    Bisection: power grows with n but for the discreteness of the exact test, so the answer can be a seed or
    two off the first n that reaches it.

    Args:
        mean: the mean of the paired differences.
        sd: their standard deviation.
        kind: the test, as in :func:`power`.
        level: the test's level.
        margin: the equivalence margin of ``on_par``.
        name: the sub-claim's name, which seeds the draws.
        target: the power wanted.

    Returns:
        The number of seeds as a float; NaN when even :data:`MAX_SEEDS` do not reach ``target``, or where
        ``mean`` or ``sd`` is not finite.
    """
    if not (np.isfinite(mean) and np.isfinite(sd)):
        return float("nan")

    def reaches(n: int) -> bool:
        return power(mean, sd, n, kind, level, margin, name) >= target

    if not reaches(MAX_SEEDS):
        return float("nan")
    low, high = 1, MAX_SEEDS  # reaches(high), not reaches(low): 2^-1 > any level used
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if reaches(middle) else (middle, high)
    return float(high)
