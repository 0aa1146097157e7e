"""Risk measures of discrete weighted distributions.

The weighted Value-at-Risk (and the Conditional Value-at-Risk, the lower-tail mean) live here, in
the lowest layer, because both the problems (true VaR of f(x, Z), used for regret) and the
algorithms (VaR of the confidence bounds and of the posterior mean) need exactly the same definition.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

#: Cumulative masses within this distance of alpha count as having reached alpha. Masses are
#: normalized floats, so a cumulative sum that equals alpha in exact arithmetic can come out a few
#: ulps below it; without the tolerance ``alpha = P(Z <= z_k)`` would select z_{k+1}.
CUMULATIVE_MASS_TOL = 1e-12


def weighted_var(values: Tensor, masses: Tensor, alpha: float) -> Tensor:
    """Lower alpha-quantile of a discrete weighted distribution, batched.

    VaR_alpha(F) = inf{w : P(F <= w) >= alpha}, where F takes the value ``values[..., i]`` with
    probability ``masses[..., i]``. Computed by sorting the values ascending, accumulating their
    masses and taking the first value whose cumulative mass reaches alpha.

    The result is one of the entries of ``values`` (found without gradient, then gathered), so it
    is differentiable almost everywhere, with the gradient flowing to the selected entry only.

    Args:
        values: ``batch_shape x n`` realizations.
        masses: ``n`` or ``batch_shape x n`` non-negative masses that sum to one along the last
            dimension (not re-normalized here: the caller owns the distribution).
        alpha: risk level in (0, 1). Any alpha at or below the smallest mass gives the minimum.

    Returns:
        ``batch_shape`` tensor of VaR values.

    Example:
        >>> weighted_var(torch.tensor([3.0, 1.0, 2.0]), torch.tensor([0.2, 0.3, 0.5]), 0.3)
        tensor(1.)
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    with torch.no_grad():
        index = var_index(values.detach(), masses.detach(), alpha)
    return torch.gather(values, -1, index.unsqueeze(-1)).squeeze(-1)


def weighted_cvar(values: Tensor, masses: Tensor, alpha: float) -> Tensor:
    """Lower-tail mean (Conditional Value-at-Risk) of a discrete weighted distribution, batched.

    With the values sorted ascending, v_(1) <= ... <= v_(n), their masses p_(i) and cumulative
    masses C_i = p_(1) + ... + p_(i) (C_0 = 0), k the last index with C_k <= alpha::

        CVaR_alpha(F) = (1 / alpha) [ sum_{i <= k} p_(i) v_(i) + (alpha - C_k) v_(k+1) ],

    i.e. each sorted value weighs the part of its mass that lies in [0, alpha] of the cumulative
    scale, min(C_i, alpha) - min(C_{i-1}, alpha). It equals (1 / alpha) times the integral of
    VaR_u(F) over u in (0, alpha], lies between the minimum and VaR_alpha(F), and is continuous in
    alpha, the values and the masses. Ties: equal values may come in any order, the sum is the same.
    Differentiable in ``values`` (the sort is a permutation; gradients reach the tail's entries).

    Args:
        values: ``batch_shape x n`` realizations.
        masses: ``n`` or ``batch_shape x n`` non-negative masses that sum to one along the last
            dimension (not re-normalized here).
        alpha: risk level in (0, 1).

    Returns:
        ``batch_shape`` tensor of CVaR values.

    Example:
        >>> weighted_cvar(torch.tensor([3.0, 1.0, 2.0]), torch.tensor([0.2, 0.3, 0.5]), 0.5)
        tensor(1.4000)
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    order = stable_argsort(values.detach())
    ordered = torch.gather(values, -1, order)
    ordered_masses = torch.gather(masses.expand_as(values), -1, order)
    cumulative = torch.cumsum(ordered_masses, dim=-1)
    # min(C_i, alpha) - min(C_{i-1}, alpha): the shares telescope to exactly min(C_n, alpha) = alpha
    reached = torch.clamp(cumulative, max=alpha)
    share = torch.diff(reached, dim=-1, prepend=torch.zeros_like(reached[..., :1]))
    return (share * ordered).sum(dim=-1) / alpha


def var_index(values: Tensor, masses: Tensor, alpha: float) -> Tensor:
    """The position (along the last dimension) of the entry that :func:`weighted_var` returns.

    Selection is the hot spot of every method here (rho-KG^apx takes millions of VaRs of rows of
    100 per iteration), so the cheapest exact route is taken:

    * shared masses (``n``) where the k smallest masses already reach alpha (uniform masses: k =
      ceil(alpha n)): the quantile is always among the k smallest values, whatever the row, so a
      partial sort (topk) suffices;
    * otherwise (e.g. a Gaussian-weighted grid, whose smallest values sit at negligible masses)
      a full stable sort (:func:`stable_argsort`), the masses accumulated by torch
      (:func:`_var_index_sorted`).

    Ties: any order among equal values selects the same value.
    """
    n = values.shape[-1]
    if masses.ndim == 1:
        k = _safe_k(masses, alpha)
        if k <= n // 4:
            order = torch.topk(values, k, dim=-1, largest=False, sorted=True).indices
            return torch.gather(order, -1, _first_reaching(masses[order], alpha))[..., 0]
        if values.device.type == "cpu":
            return _var_index_sorted(values, masses, alpha)
    masses = masses.expand_as(values)
    order = stable_argsort(values)
    return torch.gather(order, -1, _first_reaching(torch.gather(masses, -1, order), alpha))[..., 0]


def stable_argsort(values: Tensor) -> Tensor:
    """``torch.argsort(values, dim=-1, stable=True)``, the same permutation, 3-4 times faster on CPU
    rows of tens to hundreds (no gradient).

    A row without equal values has one ascending order, which any sort finds: numpy's default
    (introsort, vectorized) argsort finds it several times faster than a stable sort. A row with
    equal values (or a NaN) is sorted again by numpy's stable sort, which orders ties by position as
    torch's does, so the permutation is the stable one in every row.

    Args:
        values: ``batch_shape x n`` values on CPU.

    Returns:
        ``batch_shape x n`` positions (int64).
    """
    if values.device.type != "cpu":
        return torch.argsort(values, dim=-1, stable=True)
    n = values.shape[-1]
    rows = values.detach().reshape(-1, n)
    order = torch.from_numpy(np.argsort(rows.numpy(), axis=-1))
    ordered = torch.gather(rows, -1, order)  # torch's gather: several times numpy's take_along_axis
    tied = (ordered[:, 1:] == ordered[:, :-1]).any(dim=-1) | torch.isnan(ordered[:, -1])
    if tied.any():
        order[tied] = torch.from_numpy(np.argsort(rows[tied].numpy(), axis=-1, kind="stable"))
    return order.reshape(values.shape)


def _var_index_sorted(values: Tensor, masses: Tensor, alpha: float) -> Tensor:
    """:func:`var_index` for shared masses on CPU: the stable order of :func:`stable_argsort`, the
    masses gathered and accumulated by torch (whose cumulative sum on many short rows is several
    times numpy's, and adds in the same order)."""
    n = values.shape[-1]
    order = stable_argsort(values).reshape(-1, n)
    sorted_masses = masses[order]
    threshold = alpha - CUMULATIVE_MASS_TOL
    # The quantile usually sits in the first half of the sorted row: accumulate that half, and the
    # whole row only where the half falls short of alpha.
    head = min(n, max(8, n // 2))
    index = (torch.cumsum(sorted_masses[:, :head], dim=-1) < threshold).sum(dim=-1)
    short = torch.nonzero(index == head).squeeze(-1)
    if short.numel() and head < n:
        index[short] = (torch.cumsum(sorted_masses[short], dim=-1) < threshold).sum(dim=-1)
    index = index.clamp_(max=n - 1)
    chosen = torch.gather(order, -1, index.unsqueeze(-1)).squeeze(-1)
    return chosen.reshape(values.shape[:-1])


def _safe_k(masses: Tensor, alpha: float) -> int:
    """The smallest k whose k smallest masses sum to at least alpha: any k smallest values carry
    at least that much, so the quantile is among them."""
    cumulative = torch.cumsum(torch.sort(masses).values, dim=0)
    return int((cumulative < alpha - CUMULATIVE_MASS_TOL).sum()) + 1


def _first_reaching(sorted_masses: Tensor, alpha: float) -> Tensor:
    """``... x 1``: the index of the first entry whose cumulative mass reaches alpha (the number
    of entries still short of it); the clamp covers masses that sum to slightly less than one."""
    cumulative = torch.cumsum(sorted_masses, dim=-1)
    index = (cumulative < alpha - CUMULATIVE_MASS_TOL).sum(dim=-1, keepdim=True)
    return index.clamp(max=sorted_masses.shape[-1] - 1)


#: A segment of the interpolant whose two end values differ by less than this is flat: its mass
#: is an atom at its value (a uniform spread over a zero-width interval has an infinite density).
FLAT_SEGMENT = 1e-12


def _segments(values: Tensor, row_masses: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The interpolant's segments of ``batch_shape x R x n`` node values, flattened to ``B x S``:
    their lower and upper end values and their masses (``row_masses[r] / (n - 1)`` each)."""
    n = values.shape[-1]
    v = values.detach().reshape(-1, *values.shape[-2:])
    a = torch.minimum(v[..., :-1], v[..., 1:]).reshape(v.shape[0], -1)  # B x S segments
    b = torch.maximum(v[..., :-1], v[..., 1:]).reshape(v.shape[0], -1)
    mass = (row_masses.to(v) / (n - 1)).repeat_interleave(n - 1).expand_as(a)
    return a, b, mass


def piecewise_linear_var(values: Tensor, row_masses: Tensor, alpha: float) -> Tensor:
    """Exact lower alpha-quantile of a piecewise-linear interpolant, batched.

    Each row ``r`` holds h at ``n`` equally spaced nodes of a uniform variable U on [0, 1]; between
    nodes h is interpolated linearly, and row ``r`` carries probability ``row_masses[r]``. The
    interpolant's value is then a mixture of uniform distributions, one per segment (on
    [min, max] of its two end values, mass ``row_masses[r] / (n - 1)``), whose CDF is piecewise
    linear in w with breakpoints at the node values. It is built by one sweep over the sorted
    breakpoints (each segment adds its density where it starts and removes it where it ends) and
    inverted exactly, without bisection.

    Accuracy: a quantile is 1-Lipschitz in the sup norm, so the result is within
    max |h - interpolant| <= (1 / (n - 1))^2 max |h''| / 8 of the quantile of h(U) (plus, over
    rows, the error of the row rule). See :meth:`problems.base.Problem.var`.

    Args:
        values: ``batch_shape x R x n`` node values.
        row_masses: ``R`` probabilities summing to one.
        alpha: risk level in (0, 1).

    Returns:
        ``batch_shape`` quantiles (no gradient).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    batch_shape = values.shape[:-2]
    a, b, mass = _segments(values, row_masses)
    width = b - a
    flat = width < FLAT_SEGMENT
    density = torch.where(flat, torch.zeros_like(a), mass / torch.where(flat, 1.0, width))
    positions = torch.cat([a, b], dim=-1)
    slope_change = torch.cat([density, -density], dim=-1)
    jump = torch.cat([torch.where(flat, mass, torch.zeros_like(mass)), torch.zeros_like(mass)], -1)
    positions, order = torch.sort(positions, dim=-1)
    slope_change = torch.gather(slope_change, -1, order)
    jump = torch.gather(jump, -1, order)
    slope = torch.cumsum(slope_change, dim=-1)  # CDF slope just right of each breakpoint
    gap = positions[:, 1:] - positions[:, :-1]
    rise = torch.cat([torch.zeros_like(gap[:, :1]), slope[:, :-1] * gap], dim=-1)
    cdf_after = torch.cumsum(rise + jump, dim=-1)  # CDF at each breakpoint, its atom included
    threshold = alpha - CUMULATIVE_MASS_TOL
    k = (cdf_after < threshold).sum(dim=-1, keepdim=True).clamp(max=positions.shape[-1] - 1)
    before = torch.gather(cdf_after - jump, -1, k)  # CDF just left of breakpoint k
    previous = (k - 1).clamp(min=0)
    start = torch.gather(positions, -1, previous)
    start_cdf = torch.gather(cdf_after, -1, previous)
    start_slope = torch.gather(slope, -1, previous)
    inside = (before >= threshold) & (k > 0) & (start_slope > 0)
    crossing = start + (alpha - start_cdf) / torch.where(inside, start_slope, 1.0)
    at_k = torch.gather(positions, -1, k)
    result = torch.where(inside, torch.minimum(crossing, at_k), at_k)
    return result.squeeze(-1).reshape(batch_shape)


def piecewise_linear_cvar(values: Tensor, row_masses: Tensor, alpha: float) -> Tensor:
    """Exact lower-tail mean (CVaR) of the piecewise-linear interpolant of
    :func:`piecewise_linear_var`, batched.

    The interpolant's value is a mixture of uniform distributions, one per segment [a, b] of mass m
    (an atom at a when the segment is flat). With q = VaR_alpha from :func:`piecewise_linear_var`,

        CVaR_alpha = (1 / alpha) [ E[Y 1{Y < q}] + (alpha - P(Y < q)) q ],

    and each segment adds m (min(b, q)^2 - a^2) / (2 (b - a)) to E[Y 1{Y < q}] and
    m (min(b, q) - a) / (b - a) to P(Y < q) when a < q (an atom: m a and m). Closed form, no
    sampling; it is the integral of the interpolant's VaR_u over u in (0, alpha] divided by alpha.
    The quadrature error against h(U) itself is at most the interpolation error, as for the VaR
    (CVaR is 1-Lipschitz in the sup norm too).

    Args:
        values: ``batch_shape x R x n`` node values (n equally spaced nodes of U on [0, 1] per row).
        row_masses: ``R`` probabilities summing to one.
        alpha: risk level in (0, 1).

    Returns:
        ``batch_shape`` CVaR values (no gradient).
    """
    q = piecewise_linear_var(values, row_masses, alpha)
    a, b, mass = _segments(values, row_masses)
    level = q.reshape(-1, 1)
    width = b - a
    flat = width < FLAT_SEGMENT
    below = a < level
    upper = torch.minimum(b, level)
    share = torch.where(flat, torch.ones_like(a), (upper - a) / torch.where(flat, 1.0, width))
    mean = torch.where(flat, a, (upper + a) / 2)  # of the segment's part below q
    weight = torch.where(below, mass * share, torch.zeros_like(mass))
    partial = (weight * mean).sum(dim=-1)
    reached = weight.sum(dim=-1)
    cvar = (partial + (alpha - reached) * level.squeeze(-1)) / alpha
    return cvar.reshape(q.shape)


def _triangles(v: Tensor) -> tuple[Tensor, ...]:
    """The triangulation of ``B x n x n`` node values: each grid cell split into two triangles,
    their sorted vertex values v0 <= v1 <= v2 (``B x T``), whether each is flat, and the scales
    1 / (d10 d20) and 1 / (d21 d20) of its density's two pieces."""
    c00, c10, c01, c11 = v[:, :-1, :-1], v[:, 1:, :-1], v[:, :-1, 1:], v[:, 1:, 1:]
    corners = torch.stack([torch.stack([c00, c10, c01], -1), torch.stack([c11, c10, c01], -1)], 1)
    v0, v1, v2 = torch.sort(corners.reshape(v.shape[0], -1, 3), dim=-1).values.unbind(-1)  # B x T
    d20, d10, d21 = v2 - v0, v1 - v0, v2 - v1
    tiny = torch.finfo(v.dtype).tiny
    return (v0, v1, v2, d20 < FLAT_SEGMENT, 1.0 / (d10 * d20).clamp_min(tiny),
            1.0 / (d21 * d20).clamp_min(tiny))


def triangulated_var(values: Tensor, alpha: float, iterations: int = 60) -> Tensor:
    """Lower alpha-quantile of h(U1, U2), U uniform on [0, 1]^2, from h on an n x n node grid.

    Each grid cell is split into two triangles on which h is interpolated linearly. The CDF of a
    linear function over a triangle with uniform mass is closed-form (piecewise quadratic in w,
    C^1), so the interpolant's CDF F(w) and density F'(w) are exact sums over triangles; the
    quantile is the root of F(w) = alpha, found by Newton's method safeguarded by bisection
    within [min, max] of the node values (a handful of steps: F is C^1 and piecewise quadratic).
    As for :func:`piecewise_linear_var`, the result is within max |h - interpolant| of the true
    quantile.

    Args:
        values: ``batch_shape x n x n`` values at ``linspace(0, 1, n)`` in each coordinate of u.
        alpha: risk level in (0, 1).
        iterations: cap on Newton/bisection steps (it stops once every root is found).

    Returns:
        ``batch_shape`` quantiles (no gradient).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    batch_shape = values.shape[:-2]
    v = values.detach().reshape(-1, *values.shape[-2:])
    v0, v1, v2, flat, lower_scale, upper_scale = _triangles(v)
    mass = 1.0 / v0.shape[-1]
    tiny = torch.finfo(v.dtype).tiny

    def cdf_and_density(w: Tensor) -> tuple[Tensor, Tensor]:
        t = torch.minimum(torch.maximum(w, v0), v2)
        low = t <= v1
        below = (t - v0) ** 2 * lower_scale
        above = 1.0 - (v2 - t) ** 2 * upper_scale
        part = torch.where(low, below, above)
        part = torch.where(flat, (w >= v0).to(v), part)
        interior = (w > v0) & (w < v2) & ~flat
        dens = torch.where(low, 2.0 * (t - v0) * lower_scale, 2.0 * (v2 - t) * upper_scale)
        dens = torch.where(interior, dens, torch.zeros_like(dens))
        return mass * part.sum(-1, keepdim=True), mass * dens.sum(-1, keepdim=True)

    flat_values = v.reshape(v.shape[0], -1)
    lo = flat_values.min(-1, keepdim=True).values
    hi = flat_values.max(-1, keepdim=True).values
    k = max(1, min(flat_values.shape[-1], round(alpha * flat_values.shape[-1])))
    w = torch.kthvalue(flat_values, k, dim=-1, keepdim=True).values  # a node quantile to start
    done = torch.zeros_like(w, dtype=torch.bool)
    for _ in range(iterations):
        cdf, dens = cdf_and_density(w)
        excess = cdf - alpha
        # F sums ~10^5 terms: its rounding is ~1e-12, and an F error e moves w by e / density
        done = excess.abs() <= 1e-11
        if bool(done.all()):
            break
        hi = torch.where(excess > 0, w, hi)
        lo = torch.where(excess < 0, w, lo)
        newton = w - excess / dens.clamp_min(tiny)
        ok = (dens > 0) & (newton > lo) & (newton < hi)
        w = torch.where(done, w, torch.where(ok, newton, 0.5 * (lo + hi)))
    # unconverged rows (a flat CDF at alpha, or an atom) end at the bracket's upper end, where
    # F >= alpha: the lower quantile up to the bracket's width
    return torch.where(done, w, hi).squeeze(-1).reshape(batch_shape)


def triangulated_cvar(values: Tensor, alpha: float) -> Tensor:
    """Exact lower-tail mean (CVaR) of the triangulated interpolant of :func:`triangulated_var`.

    On a triangle with sorted vertex values v0 <= v1 <= v2 (uniform mass, h linear) the density of
    Y is 2 (w - v0) / (d10 d20) on [v0, v1] and 2 (v2 - w) / (d21 d20) on [v1, v2], so the partial
    expectation E[Y 1{Y <= t}] is closed form: with s = t - v0, (v0 s^2 + 2 s^3 / 3) / (d10 d20)
    for t <= v1; with r = v2 - t, (v0 + v1 + v2) / 3 - (v2 r^2 - 2 r^3 / 3) / (d21 d20) above (a
    flat triangle is an atom at v0). With q = VaR_alpha and F(q) its CDF,

        CVaR_alpha = (1 / alpha) [ sum over triangles of mass x E[Y 1{Y <= q}] + (alpha - F(q)) q ].

    Args:
        values: ``batch_shape x n x n`` values at ``linspace(0, 1, n)`` in each coordinate of u.
        alpha: risk level in (0, 1).

    Returns:
        ``batch_shape`` CVaR values (no gradient).
    """
    q = triangulated_var(values, alpha)
    v = values.detach().reshape(-1, *values.shape[-2:])
    v0, v1, v2, flat, lower_scale, upper_scale = _triangles(v)
    mass = 1.0 / v0.shape[-1]
    level = q.reshape(-1, 1)
    t = torch.minimum(torch.maximum(level, v0), v2)
    low = t <= v1
    s_, r_ = t - v0, v2 - t
    cdf = torch.where(low, s_**2 * lower_scale, 1.0 - r_**2 * upper_scale)
    partial = torch.where(low, (v0 * s_**2 + 2.0 * s_**3 / 3.0) * lower_scale,
                          (v0 + v1 + v2) / 3.0 - (v2 * r_**2 - 2.0 * r_**3 / 3.0) * upper_scale)
    atom = (v0 <= level).to(v)
    cdf = torch.where(flat, atom, cdf)
    partial = torch.where(flat, v0 * atom, partial)
    reached = mass * cdf.sum(-1)
    cvar = (mass * partial.sum(-1) + (alpha - reached) * level.squeeze(-1)) / alpha
    return cvar.reshape(q.shape)
