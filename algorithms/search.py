"""Maximizing a batched score of x over [0, 1]^d_x: quasi-random scoring, then L-BFGS-B.

Used by V-UCB (VaR of the upper bound), StableOpt (minimum of the upper bound) and anything else
whose score is cheap to evaluate for many x at once.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.generation.gen import gen_candidates_scipy
from botorch.models.model import Model
from torch import Tensor

Score = Callable[[Tensor], Tensor]


class ScoreAcquisition(AcquisitionFunction):
    """A BoTorch acquisition function around a score ``batch x d_x -> batch`` (q = 1)."""

    def __init__(self, model: Model, score: Score) -> None:
        super().__init__(model=model)
        self.score = score

    def forward(self, X: Tensor) -> Tensor:
        """``b x 1 x d_x`` -> ``b``."""
        return self.score(X.squeeze(-2))


def maximize_x(
    model: Model,
    score: Score,
    d_x: int,
    seed: int,
    n_raw: int,
    n_restarts: int,
    maxiter: int = 200,
    extra: Tensor | None = None,
) -> tuple[Tensor, float]:
    """Approximate argmax of ``score`` over [0, 1]^d_x.

    1. score ``n_raw`` scrambled Sobol points (seeded by ``seed``) plus the ``extra`` points (e.g. the
       observed x) in one batched call;
    2. start L-BFGS-B (BoTorch's ``gen_candidates_scipy``, box [0, 1]^d_x) from the ``n_restarts``
       best of them, all restarts as one batched problem;
    3. return the best point seen in either step, with its score.

    Returns:
        ``d_x`` maximizer and its score.
    """
    sobol = torch.quasirandom.SobolEngine(d_x, scramble=True, seed=seed)
    raw = sobol.draw(n_raw, dtype=torch.float64)
    if extra is not None and extra.numel():
        raw = torch.cat([raw, extra.to(raw)])
    with torch.no_grad():
        raw_scores = score(raw)
    best = int(raw_scores.argmax())
    best_x, best_value = raw[best], float(raw_scores[best])
    starts = raw[torch.topk(raw_scores, min(n_restarts, raw.shape[0])).indices]
    acquisition = ScoreAcquisition(model, score)
    # VaR and min scores have kinks where L-BFGS-B's line search ends "ABNORMAL"; the point it
    # stopped at is still valid and is compared with the raw scores below. BoTorch forces such
    # warnings to "always", so they are recorded (and dropped) rather than filtered.
    with warnings.catch_warnings(record=True):
        candidates, values = gen_candidates_scipy(
            starts.unsqueeze(-2), acquisition, lower_bounds=0.0, upper_bounds=1.0,
            options={"maxiter": maxiter},
        )
    i = int(values.argmax())
    if float(values[i]) > best_value:
        best_x, best_value = candidates[i, 0].detach(), float(values[i])
    return best_x.clone(), best_value
