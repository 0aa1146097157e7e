"""The pinball-loss VaR estimator recovers known quantiles."""

import math

import pytest
import torch

from algorithms.pinball import estimate_var_pinball, pinball_loss


def test_pinball_loss_is_the_tilted_absolute_value() -> None:
    w = torch.tensor([-2.0, -0.5, 0.0, 0.5, 3.0])
    assert torch.allclose(pinball_loss(w, 0.1), torch.tensor([1.8, 0.45, 0.0, 0.05, 0.3]))
    assert torch.allclose(pinball_loss(w, 0.5), 0.5 * w.abs())


@pytest.mark.parametrize("alpha", [0.1, 0.5])
def test_recovers_normal_and_exponential_quantiles_batched(alpha: float) -> None:
    # rows: N(1, 2^2), N(-3, 0.1^2), Exp(1): quantiles mu + sigma Phi^-1(alpha) and -log(1 - alpha)
    z = torch.distributions.Normal(0.0, 1.0).icdf(torch.tensor(alpha))
    truth = torch.tensor([1.0 + 2.0 * z, -3.0 + 0.1 * z, -math.log(1 - alpha)])
    scale = torch.tensor([2.0, 0.1, 1.0])

    def sample(n: int, g: torch.Generator) -> torch.Tensor:
        normal = torch.randn(2, n, generator=g)
        expo = -torch.log1p(-torch.rand(1, n, generator=g))
        return torch.cat([torch.tensor([[1.0], [-3.0]]) + torch.tensor([[2.0], [0.1]]) * normal, expo])

    estimate = estimate_var_pinball(sample, alpha, torch.Generator().manual_seed(0), steps=400,
                                    batch_size=256)
    assert ((estimate - truth).abs() / scale <= 0.03).all(), (estimate, truth)


def test_is_reproducible_from_its_generator() -> None:
    def sample(n: int, g: torch.Generator) -> torch.Tensor:
        return torch.randn(3, n, generator=g)

    a = estimate_var_pinball(sample, 0.1, torch.Generator().manual_seed(4), steps=50)
    b = estimate_var_pinball(sample, 0.1, torch.Generator().manual_seed(4), steps=50)
    assert torch.equal(a, b)
