"""Local neural surrogate optimization (LNSO; the paper's Appendix, Algorithm 2).

Maximizes VaR_alpha(h(x, Z)) over x in [0, 1]^d_x when only samples of h(x, Z) are available (no
gradient of the VaR in x). Each start s carries a small network g_s(x) (2 hidden layers of 30
sigmoid units, linear output) trained by the pinball loss to approximate the VaR over the ball
B(x_c, r) around its centre; x then ascends g_s by Adam steps and, whenever it leaves the ball, the
ball is re-centred on it and g_s re-trained (warm-started from its current weights).

All starts are one batched computation: the networks' weights are ``S x ...`` tensors applied with
``torch.baddbmm``, and a re-training trains the networks of every start that left its ball at that
step together (a gather of their weights, then a scatter back); there is no Python loop over starts.

The counts are options (:class:`LNSOSettings`). The authors used 50 starts, 1000 training steps
per (re)fit and 2000 x steps at Adam lr 1e-3 (docs/conventions.md section 5): minutes per iteration on one
core. The defaults here are sized for about a second per BO iteration (docs/explanation/method.md,
"Continuous Z").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from algorithms.base import positive_float, positive_int
from algorithms.pinball import pinball_loss

#: ``(X, Z) -> values``: h at every (x, z) pair, ``S x k x d_x`` and ``m x d_z`` -> ``S x k x m``.
Target = Callable[[Tensor, Tensor], Tensor]
#: ``(n, generator) -> n x d_z`` draws of Z.
ZSampler = Callable[[int, torch.Generator], Tensor]


@dataclass(frozen=True)
class LNSOSettings:
    """Settings of :func:`lnso_maximize` (Algorithm 2's symbols in brackets).

    Attributes:
        radius: radius of the local ball around each start's x in which its network is fitted; x
            leaving it re-centres the ball and re-fits the network [r] (authors: 0.1).
        hidden: units per hidden layer of each start's network, two sigmoid layers and a linear
            output (authors: 30).
        n_x: x drawn uniformly in the ball per training step [|X|] (authors: 50).
        n_z: Z drawn per training step [n_z] (the paper: 10 samples of Z).
        train_steps: Adam steps of the first fit of the networks, cosine-decayed [t_g] (authors:
            1000).
        retrain_steps: Adam steps of a re-fit after re-centring, warm-started (authors: t_g).
        x_steps: Adam steps of x ascending its network [t_v] (authors: 2000).
        lr_g: learning rate of the networks [gamma_g] (authors: 1e-3).
        lr_x: learning rate of x [gamma_x] (authors: 1e-3).
    """

    radius: float = 0.1
    hidden: int = 30
    n_x: int = 50
    n_z: int = 10
    train_steps: int = 300
    retrain_steps: int = 100
    x_steps: int = 100
    lr_g: float = 1e-2
    lr_x: float = 1e-2

    def __post_init__(self) -> None:
        for key in ("hidden", "n_x", "n_z", "train_steps", "retrain_steps", "x_steps"):
            positive_int("LNSO", key, getattr(self, key))
        for key in ("radius", "lr_g", "lr_x"):
            positive_float("LNSO", key, getattr(self, key))


class BatchedMLP:
    """S independent networks d -> hidden -> hidden -> 1 (sigmoid, sigmoid, linear).

    Inputs are standardized per start, (x - centre) / radius with the centre of its current ball,
    so the sigmoid units always see inputs in the unit ball (x far from a fixed anchor would
    saturate them); a warm start after re-centring is the old fit, translated.
    """

    def __init__(self, centers: Tensor, radius: float, hidden: int, generator: torch.Generator) -> None:
        S, d = centers.shape
        self.centers, self.radius = centers, radius

        def init(fan_in: int, *shape: int) -> Tensor:  # PyTorch's nn.Linear default: U(+-1/sqrt(fan_in))
            bound = 1.0 / math.sqrt(fan_in)
            return (2 * torch.rand(*shape, generator=generator, dtype=centers.dtype) - 1) * bound

        self.params = [init(d, S, d, hidden), init(d, S, 1, hidden), init(hidden, S, hidden, hidden),
                       init(hidden, S, 1, hidden), init(hidden, S, hidden, 1), init(hidden, S, 1, 1)]

    @staticmethod
    def forward(params: list[Tensor], inputs: Tensor) -> Tensor:
        """``S' x k x d`` standardized inputs -> ``S' x k`` outputs, for the networks ``params``."""
        w1, b1, w2, b2, w3, b3 = params
        hidden = torch.sigmoid(torch.baddbmm(b1, inputs, w1))
        hidden = torch.sigmoid(torch.baddbmm(b2, hidden, w2))
        return torch.baddbmm(b3, hidden, w3).squeeze(-1)

    def standardize(self, x: Tensor, index: Tensor) -> Tensor:
        """``S' x k x d`` points of the starts ``index`` -> network inputs."""
        return (x - self.centers[index].unsqueeze(-2)) / self.radius


def _uniform_ball(center: Tensor, radius: float, k: int, generator: torch.Generator) -> Tensor:
    """``S' x k x d`` points uniform in the balls B(center, radius), clamped to [0, 1]^d."""
    S, d = center.shape
    direction = torch.randn(S, k, d, generator=generator, dtype=center.dtype)
    direction = direction / direction.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    r = radius * torch.rand(S, k, 1, generator=generator, dtype=center.dtype) ** (1.0 / d)
    return (center.unsqueeze(-2) + r * direction).clamp(0.0, 1.0)


def _train(net: BatchedMLP, index: Tensor, centers: Tensor, target: Target, sample_z: ZSampler,
           alpha: float, steps: int, settings: LNSOSettings, generator: torch.Generator) -> None:
    """Fit the networks of starts ``index`` to VaR_alpha(h(x, Z)) on their balls (Algorithm 2,
    lines 7-12), all together, and write their weights back."""
    params = [p[index].clone().requires_grad_(True) for p in net.params]
    optimizer = torch.optim.Adam(params, lr=settings.lr_g)
    for step in range(steps):
        # cosine decay: at a constant rate Adam leaves the weights jittering by about one step,
        # and the surrogate's argmax with them
        optimizer.param_groups[0]["lr"] = settings.lr_g * 0.5 * (1 + math.cos(math.pi * step / steps))
        with torch.no_grad():
            X = _uniform_ball(centers, settings.radius, settings.n_x, generator)
            Z = sample_z(settings.n_z, generator)
            values = target(X, Z)  # S' x n_x x n_z
        g = BatchedMLP.forward(params, net.standardize(X, index))
        # mean over (x, z) per start, summed over starts: each start's gradient is its own
        loss = pinball_loss(values - g.unsqueeze(-1), alpha).mean(dim=(-1, -2)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    for p, trained in zip(net.params, params, strict=True):
        p[index] = trained.detach()


def lnso_maximize(target: Target, sample_z: ZSampler, starts: Tensor, alpha: float,
                  settings: LNSOSettings, generator: torch.Generator) -> tuple[Tensor, int]:
    """Algorithm 2 from every start at once.

    Args:
        target: h on the product of x points and Z draws, see :data:`Target`.
        sample_z: draws of Z, see :data:`ZSampler`.
        starts: ``S x d_x`` initial points in [0, 1]^d_x.
        alpha: risk level.
        settings: the counts and rates.
        generator: the stream of every random draw (weights, balls, Z).

    Returns:
        ``S x d_x`` end points, and the number of (re)trainings performed (the first fit counts
        once for all starts; a re-centring round counts once however many starts it re-trains).
    """
    S = starts.shape[0]
    centers = starts.clone()  # shared with the networks' standardization, updated in place
    net = BatchedMLP(centers, settings.radius, settings.hidden, generator)
    everyone = torch.arange(S)
    _train(net, everyone, centers, target, sample_z, alpha, settings.train_steps, settings, generator)
    trainings = 1
    x = starts.clone().requires_grad_(True)
    optimizer = torch.optim.Adam([x], lr=settings.lr_x)
    params = net.params
    for _ in range(settings.x_steps):
        g = BatchedMLP.forward(params, net.standardize(x.unsqueeze(-2), everyone)).squeeze(-1)
        optimizer.zero_grad()
        (-g.sum()).backward()  # ascent; each start's gradient is its own
        optimizer.step()
        with torch.no_grad():
            x.clamp_(0.0, 1.0)  # project into the domain (line 15)
            left = torch.nonzero((x - centers).norm(dim=-1) >= settings.radius).squeeze(-1)
        if left.numel():  # re-centre the balls x left, re-train their networks (lines 4-12)
            centers[left] = x.detach()[left]
            _train(net, left, centers[left], target, sample_z, alpha, settings.retrain_steps,
                   settings, generator)
            trainings += 1
    return x.detach(), trainings
