"""Risk measures of discrete weighted distributions.

The weighted Value-at-Risk lives here, in the lowest layer, because both the problems (true VaR of
f(x, Z), used for regret) and the algorithms (VaR of the confidence bounds and of the posterior mean)
need exactly the same definition.
"""

from __future__ import annotations

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

    The result is one of the entries of ``values`` (gathered after a sort), so it is differentiable
    almost everywhere, with the gradient flowing to the selected order statistic only.

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
    masses = masses.expand_as(values)
    n = values.shape[-1]
    k = max(8, n // 4)
    if k >= n:
        return _var_from(*torch.sort(values, dim=-1, stable=True), masses, alpha)
    # Fast path: the quantile is usually among the k smallest values, and a partial sort (topk)
    # costs a fraction of a full one. Rows whose k smallest carry less than alpha are sorted fully.
    low, order = torch.topk(values, k, dim=-1, largest=False, sorted=True)
    result = _var_from(low, order, masses, alpha)
    short = torch.gather(masses, -1, order).sum(-1) < alpha - CUMULATIVE_MASS_TOL
    if bool(short.any()):
        full = _var_from(*torch.sort(values[short], dim=-1, stable=True), masses[short], alpha)
        result = result.masked_scatter(short, full) if result.ndim else full.reshape(())
    return result


def _var_from(sorted_values: Tensor, order: Tensor, masses: Tensor, alpha: float) -> Tensor:
    """The VaR given the (partially) sorted values and their indices into ``masses``."""
    cumulative = torch.cumsum(torch.gather(masses, -1, order), dim=-1)
    # The number of entries whose cumulative mass is still short of alpha is the index of the first
    # entry that reaches it; the clamp covers masses that sum to slightly less than one.
    index = (cumulative < alpha - CUMULATIVE_MASS_TOL).sum(dim=-1, keepdim=True)
    index = index.clamp(max=sorted_values.shape[-1] - 1)
    return torch.gather(sorted_values, -1, index).squeeze(-1)
