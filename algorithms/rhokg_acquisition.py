"""rho-KG^apx as a BoTorch acquisition function (:class:`RhoKGAcquisition`), on the batched
estimator of :mod:`algorithms.rhokg_estimator`, with BoRisk's two-time-scale memory; and the same
acquisition as a function of x alone at fixed w (:class:`FixedW`), which :mod:`algorithms.rhokg`'s
candidate search optimizes on a discrete W."""

from __future__ import annotations

from typing import ClassVar

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.models import SingleTaskGP
from torch import Tensor

from algorithms.rhokg_estimator import FastRhoKG


class RhoKGAcquisition(AcquisitionFunction):
    """rho-KG^apx as a BoTorch acquisition function, with BoRisk's two-time-scale memory.

    ``forward(X)``: ``b x 1 x d`` -> ``b``. Every ``tts_frequency``-th call (counted from
    :meth:`tts_reset`) searches the argmax over S for each candidate and fantasy; the calls in
    between evaluate each fantasy at its remembered argmax.
    """

    #: Skip the past x' that provably cannot hold the max over S (:meth:`FastRhoKG._full_search_update`);
    #: the values and gradients are the same either way. False only to time the unpruned search.
    prune: ClassVar[bool] = True

    def __init__(self, model: SingleTaskGP, estimator: FastRhoKG, xi: Tensor, eps: Tensor,
                 current_best: float, tts_frequency: int) -> None:
        super().__init__(model=model)
        self.estimator, self.xi, self.eps = estimator, xi, eps
        self.current_best, self.tts_frequency = current_best, tts_frequency
        self.tts_reset()

    def tts_reset(self) -> None:
        self.call_count, self.inner, self.index, self.kept = 0, None, None, None

    def forward(self, X: Tensor) -> Tensor:
        candidates = X.squeeze(-2)
        est = self.estimator
        d_x = est.past_x.shape[-1]
        b = candidates.shape[0]
        # The memory serves a batch of at most its size; a smaller batch (a carried memory meeting
        # a short last batch) uses its first rows, as BoRisk's slicing of ``last_inner_solution``
        # does. Within one search the batch never changes size.
        reuse = (self.call_count % self.tts_frequency != 0 and self.inner is not None
                 and self.inner.shape[0] >= b)
        if reuse and self.kept is not None:  # cached factors of the remembered x'
            values = est.remembered_estimates(candidates, self.xi, self.eps, self.index[:b], self.kept)
        elif reuse:
            values = est.fantasy_estimates(candidates, self.xi, self.eps, inner=self.inner[:b])[:, 0]
        else:
            kept: dict | None = {} if est.root == "update" and self.tts_frequency > 1 else None
            all_values = est.fantasy_estimates(candidates, self.xi, self.eps, keep=kept, prune=self.prune)
            values, best = all_values.max(dim=1)  # b x K
            with torch.no_grad():
                S = torch.cat([candidates[:, None, :d_x].detach(),
                               est.past_x.expand(candidates.shape[0], -1, -1)], dim=1)
                self.inner = torch.gather(S, 1, best.unsqueeze(-1).expand(-1, -1, d_x))
            self.index, self.kept = best, kept
        self.call_count += 1
        return values.mean(-1) - self.current_best


class FixedW(AcquisitionFunction):
    """``acq`` as a function of x alone, each of the b restarts at its own fixed w (``b x d_z``)."""

    def __init__(self, acq: RhoKGAcquisition, w: Tensor) -> None:
        super().__init__(model=acq.model)
        self.acq, self.w = acq, w

    def forward(self, X: Tensor) -> Tensor:
        return self.acq(torch.cat([X, self.w.unsqueeze(-2).expand(*X.shape[:-1], -1)], dim=-1))
