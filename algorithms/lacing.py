"""The lacing-value search for a continuous Z (the paper's Section 3.4, "Search of Lacing Values").

At x_t, a lacing value (Definition 1) is a z with

    d_u(z) = u(x_t, z) - VaR_alpha(u(x_t, Z)) >= 0  and  d_l(z) = VaR_alpha(l(x_t, Z)) - l(x_t, z) >= 0.

Both VaRs are estimated (by :func:`algorithms.pinball.estimate_var_pinball`) before the search; the
authors' code never trained its estimate of VaR_alpha(u) (it stayed at 0), which this does not copy.
The search minimizes, by Adam from many starts in the support box (batched),

    L_LV(z) = ReLU(-d_u(z)) + ReLU(-d_l(z))                     (V-UCB Unif), or
    L_LV-P(z) = L_LV(z) - 1[d_u(z) >= 0] 1[d_l(z) >= 0] p(z)    (V-UCB Prob),

and keeps, per start, the lacing value it visited with the largest density (Prob) or the last one it
visited (Unif).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

#: ``m x d_z`` -> (l, u), two ``m`` tensors at x_t.
Bounds = Callable[[Tensor], tuple[Tensor, Tensor]]


@dataclass
class LacingSearchResult:
    """Outcome of :func:`lacing_value_search`.

    Attributes:
        z: ``m x d_z``, per start the lacing value kept (or its end point if it found none).
        found: ``m`` booleans, True where ``z`` is a lacing value (under the estimated VaRs).
        density: ``m`` densities p(z).
        loss: ``m`` values of L_LV at ``z`` (0 exactly where ``found``).
    """

    z: Tensor
    found: Tensor
    density: Tensor
    loss: Tensor


def lacing_value_search(bounds: Bounds, var_l: float, var_u: float, density: Callable[[Tensor], Tensor],
                        starts: Tensor, lower: float, upper: float, steps: int, lr: float,
                        prefer_density: bool) -> LacingSearchResult:
    """Minimize L_LV-P (``prefer_density``) or L_LV over z in [lower, upper]^d_z from ``starts``.

    Args:
        bounds: l and u at x_t, see :data:`Bounds`.
        var_l, var_u: the estimates of VaR_alpha(l(x_t, Z)) and VaR_alpha(u(x_t, Z)).
        density: p(z), ``m x d_z`` -> ``m``.
        starts: ``m x d_z`` initial points.
        lower, upper: the support box.
        steps, lr: Adam steps and learning rate.
        prefer_density: V-UCB Prob's objective L_LV-P (else Unif's L_LV).
    """
    z = starts.clone().requires_grad_(True)
    optimizer = torch.optim.Adam([z], lr=lr)
    kept = starts.clone()
    kept_found = torch.zeros(starts.shape[0], dtype=torch.bool)
    kept_density = torch.full((starts.shape[0],), -torch.inf, dtype=starts.dtype)
    for step in range(steps + 1):
        l, u = bounds(z)
        d_u, d_l = u - var_u, var_l - l
        lacing = (d_u >= 0) & (d_l >= 0)
        p = density(z)
        with torch.no_grad():  # keep the best lacing value seen (the iterate jitters around it)
            better = lacing & ((p > kept_density) if prefer_density else torch.ones_like(lacing))
            kept[better] = z.detach()[better]
            kept_density[better] = p.detach()[better]
            kept_found |= lacing
        if step == steps:
            break
        loss = torch.relu(-d_u) + torch.relu(-d_l)
        if prefer_density:
            loss = loss - lacing.to(p) * p
        optimizer.zero_grad()
        loss.sum().backward()
        optimizer.step()
        with torch.no_grad():
            z.clamp_(lower, upper)
    with torch.no_grad():
        missing = ~kept_found
        kept[missing] = z.detach()[missing]
        l, u = bounds(kept)
        loss = torch.relu(var_u - u) + torch.relu(l - var_l)
        return LacingSearchResult(kept, kept_found, density(kept), loss)
