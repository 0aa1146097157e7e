"""VaR estimation by minimizing the pinball loss over a scalar (the paper's Section 3.4).

For a random variable H, the lower alpha-quantile minimizes nu -> E[rho_alpha(H - nu)], where
rho_alpha(w) = alpha w for w >= 0 and (alpha - 1) w for w < 0 (Koenker and Bassett 1978). Its
gradient in nu is P(H < nu) - alpha, so stochastic gradient steps with fresh samples of H drive nu
to the quantile without ever sorting a large sample. Used by V-UCB with a continuous Z for
VaR_alpha(u(x, Z)) and VaR_alpha(l(x, Z)) (the lacing-value search) and to score LNSO's end points.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

#: ``(n, generator) -> batch x n``: values of H at n fresh draws, for every row of a batch.
Sampler = Callable[[int, torch.Generator], Tensor]


def pinball_loss(residual: Tensor, alpha: float) -> Tensor:
    """rho_alpha(residual), elementwise: alpha w for w >= 0, (alpha - 1) w for w < 0."""
    return torch.where(residual >= 0, alpha * residual, (alpha - 1.0) * residual)


def estimate_var_pinball(
    sample: Sampler,
    alpha: float,
    generator: torch.Generator,
    steps: int = 400,
    batch_size: int = 256,
    lr: float = 0.05,
) -> Tensor:
    """VaR_alpha of every row of a batch, by Adam on the pinball loss with fresh batches.

    Each step draws ``batch_size`` new values per row and takes one Adam step on the mean pinball
    loss of each row's own scalar nu (rows are independent problems solved together). Choices the
    paper leaves open: nu starts at the empirical quantile of the first batch, the learning rate is
    ``lr`` times that batch's standard deviation (so the estimator is scale-free) and decays on a
    cosine to zero, and the estimate is the average of the iterates of the last half (Polyak
    averaging: the plain iterate keeps jittering by about one step).

    Args:
        sample: draws values of H, see :data:`Sampler`.
        alpha: risk level in (0, 1).
        generator: the stream the draws come from.
        steps, batch_size, lr: as above.

    Returns:
        ``batch`` estimates (no gradient).
    """
    with torch.no_grad():
        first = sample(batch_size, generator)
        k = max(1, math.ceil(alpha * first.shape[-1]))
        init = torch.kthvalue(first, k, dim=-1).values
        scale = first.std(dim=-1).clamp_min(1e-12)
    # Adam's step is about lr whatever the gradient's size: a per-row lr = lr * scale is
    # obtained by optimizing nu / scale
    nu_scaled = (init / scale).clone().requires_grad_(True)
    optimizer = torch.optim.Adam([nu_scaled], lr=lr)
    total = torch.zeros_like(init)
    averaged = 0
    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = lr * 0.5 * (1.0 + math.cos(math.pi * step / steps))
        with torch.no_grad():
            values = sample(batch_size, generator)
        optimizer.zero_grad()
        residual = values - (nu_scaled * scale).unsqueeze(-1)
        pinball_loss(residual, alpha).mean(dim=-1).sum().backward()
        optimizer.step()
        if step >= steps // 2:
            total += nu_scaled.detach() * scale
            averaged += 1
    return total / averaged if averaged else nu_scaled.detach() * scale
