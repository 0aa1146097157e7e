"""rho-KG^apx (Cakmak et al., 2020, "Bayesian Optimization of Risk Measures"), as BoRisk implements
it, in the maximization form of the VaR paper (BoRisk minimizes -f at level 1 - alpha).

The pieces (docs/conventions.md section 7):

* risk estimate E_n[VaR_alpha(F(x', W))]: M joint posterior samples of f over {x'} x W, drawn as
  mean + chol(cov) eps with fixed quasi-random normal ``eps``, the weighted VaR of each, averaged;
* acquisition value of a candidate c = (x, w): K fantasy observations y_k at c; for each fantasy
  the best E_{n+1}[VaR] over S = {x} union the distinct past x; mean over fantasies minus the
  current best, max over past x of E_n[VaR];
* candidate search: raw samples (500 d) scored with fewer fantasies (4), 10 d restarts drawn with
  Boltzmann weights on the z-scores (eta = 2, the best always kept), L-BFGS-B for 40 iterations in
  batches of 5, then 1000 iterations from the best tenth; for a discrete W every raw sample gets a
  random support point w that stays fixed while x moves; two-time-scale: the argmax over S per
  fantasy is re-searched only every 10th call and reused in between;
* recommendation: argmax over past x of E_n[VaR].

Speed. After one fantasy observation at c every fantasy model has the same posterior covariance,
Sigma_n - Sigma_n(., c) Sigma_n(c, .) / (sigma_n^2(c) + noise), only the means differ, by
Sigma_n(., c) xi_k / sqrt(sigma_n^2(c) + noise). :class:`FastRhoKG` computes every mean and
covariance it needs from one Cholesky factor of the training covariance, batched over candidates,
x' in S, fantasies and samples; only the m x m Cholesky factors of the fantasy covariances (one
per candidate and x', shared by all fantasies) are left to LAPACK. The tests' reference
(``tests/algorithms/rhokg_reference.py``) computes the same number the way a port of BoRisk would:
BoTorch's ``condition_on_observations`` per candidate and a loop over x'. Both use
:func:`sample_root`, so with the same base samples they agree to rounding. The acquisition also
skips the past x' that provably cannot hold the max over S (:func:`estimate_bounds`,
:meth:`FastRhoKG._full_search_update`), which leaves every value and gradient bit for bit unchanged
and makes a proposal 2-4 times faster on a discrete Z.

Where this differs from BoRisk's code, on purpose: the refinement starts from the *best* tenth of
the first-phase solutions (BoRisk's ``optimize_outer`` sorts ascending and keeps the worst tenth,
contradicting its own docstring and paper); the two-time-scale memory is reset at every batch of
restarts (BoRisk carries it across batches, so a batch may start from another batch's argmaxes);
the Cholesky jitter is a fixed 1e-8 of the mean variance instead of GPyTorch's add-on-failure
jitter, so that the fast and the reference estimators are the same function.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import ClassVar

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.generation.gen import gen_candidates_scipy
from botorch.models import SingleTaskGP
from botorch.utils.sampling import draw_sobol_normal_samples
from torch import Tensor

from algorithms.base import Algorithm, Proposal, Recommendation, positive_float, positive_int
from algorithms.cost import ProblemSize
from algorithms.gp import PosteriorMarginals
from algorithms.options import Option, with_defaults
from problems import DiscreteZ, Problem
from problems.measures import risk_measure
from problems.risk import weighted_var
from problems.seeding import derive_seed, generator

#: A risk measure of weighted samples: ``batch x m`` values, ``m`` masses, alpha -> ``batch``.
Measure = Callable[[Tensor, Tensor, float], Tensor]


def borisk_cvar_equal(values: Tensor, masses: Tensor, alpha: float) -> Tensor:
    """CVaR as BoRisk's ``InnerRho`` computes it without weights (its acquisition, which never
    receives the weights): the equal-weight mean of the n - int(n alpha_B) smallest values, alpha_B =
    1 - alpha its upper-tail level (``samples[..., int(num_samples * alpha):]`` of -f sorted
    ascending). ``masses`` is ignored. It differs from CVaR_alpha where n alpha is not an integer:
    the boundary value weighs 1/n instead of alpha - C_k, and the mean divides by k/n instead of
    alpha (64 points at alpha = 0.1: the 7 smallest, where CVaR weighs 6.4 of them)."""
    n = values.shape[-1]
    k = n - int(n * (1.0 - alpha))  # BoRisk's int() of a float product, kept as it is
    return torch.topk(values, k, dim=-1, largest=False).values.mean(-1)


def borisk_cvar_weighted(values: Tensor, masses: Tensor, alpha: float) -> Tensor:
    """CVaR as BoRisk's ``InnerRho`` computes it with weights (its current best and recommendation):
    with -f sorted ascending and its weights accumulated, every point whose cumulative weight is
    >= alpha_B = 1 - alpha is in the tail, with its whole weight, and the sum is divided by the
    tail's weight. In f's terms: the points whose mass strictly below them is <= alpha, averaged by
    their masses; the VaR point keeps its whole mass instead of alpha - C_k, and where C_k = alpha
    exactly the next point is in too."""
    order = torch.argsort(values.detach(), dim=-1, descending=True, stable=True)  # -f ascending
    ordered = torch.gather(values, -1, order)
    weights = torch.gather(masses.expand_as(values), -1, order)
    tail = (torch.cumsum(weights, dim=-1) >= 1.0 - alpha).to(values.dtype)  # BoRisk: no tolerance
    return (ordered * weights * tail).sum(-1) / (weights * tail).sum(-1)


#: BoRisk's released formulas where they differ from the exact measure: (the acquisition's, the
#: current best's and recommendation's). VaR has none: BoRisk's equals the definition (int(n alpha_B)
#: is the lower quantile's order statistic).
RELEASED_MEASURES: dict[str, tuple[Measure, Measure]] = {"cvar": (borisk_cvar_equal, borisk_cvar_weighted)}


def measures(risk: str, formula: str) -> tuple[Measure, Measure]:
    """The acquisition's measure and the current best's and recommendation's, for the cell's risk
    measure and ``cvar_formula``: the exact one twice (:mod:`problems.measures`), or BoRisk's
    released formulas where it has its own (:data:`RELEASED_MEASURES`)."""
    if formula == "released" and risk in RELEASED_MEASURES:
        return RELEASED_MEASURES[risk]
    exact = risk_measure(risk).of_distribution
    return exact, exact

#: Relative jitter added to every covariance before its Cholesky factor: the posterior covariance
#: of f over 100 close points of W is numerically singular.
JITTER = 1e-8


def sample_root(cov: Tensor) -> Tensor:
    """Lower Cholesky factor of ``cov + JITTER * mean(diag) I``, batched over leading dims."""
    m = cov.shape[-1]
    scale = cov.diagonal(dim1=-2, dim2=-1).mean(-1).clamp_min(1e-30)
    eye = torch.eye(m, dtype=cov.dtype)
    L, info = torch.linalg.cholesky_ex(cov + JITTER * scale[..., None, None] * eye)
    if bool((info > 0).any()):
        L = torch.linalg.cholesky(cov + 1e3 * JITTER * scale[..., None, None] * eye)
    return L


def updated_noise(base: Tensor, L: Tensor, v: Tensor, eps: Tensor) -> Tensor:
    """Samples of N(0, L L^T - v v^T) from ``base = L eps``, with the square root L (I - c u u^T),
    u = L^-1 v, c = (1 - sqrt(1 - |u|^2)) / |u|^2: (I - c u u^T)^2 = I - u u^T, so this root is
    exact, and it costs O(m^2) per point instead of a new O(m^3) Cholesky factor.

    Args:
        base: ``... x K x M x m`` = L eps.
        L: ``... x m x m`` lower roots of the current covariances.
        v: ``... x m`` the rank-one downdate.
        eps: ``K x M x m`` the base samples behind ``base``.

    Returns:
        ``... x K x M x m`` samples L (I - c u u^T) eps.
    """
    u = torch.linalg.solve_triangular(L, v.unsqueeze(-1), upper=False).squeeze(-1)
    uu = (u * u).sum(-1).clamp(max=1.0 - 1e-12)  # < 1 in exact arithmetic (noise > 0)
    c = torch.where(uu > 1e-12, (1 - (1 - uu).sqrt()) / uu.clamp_min(1e-12), 0.5)
    proj = torch.einsum("kst,...t->...ks", eps, u)  # u^T eps: ... x K x M
    return base - (c[..., None, None, None] * v[..., None, None, :]) * proj.unsqueeze(-1)


def _diagonal_update(base: Tensor, L: Tensor, v: Tensor, eps: Tensor) -> Tensor:
    """:func:`updated_noise` when fantasy k has its own point: ``base`` b x K x M x m, ``L``
    b x K x m x m, ``v`` b x K x m, ``eps`` K x M x m."""
    u = torch.linalg.solve_triangular(L, v.unsqueeze(-1), upper=False).squeeze(-1)
    uu = (u * u).sum(-1).clamp(max=1.0 - 1e-12)
    c = torch.where(uu > 1e-12, (1 - (1 - uu).sqrt()) / uu.clamp_min(1e-12), 0.5)
    proj = torch.einsum("kst,bkt->bks", eps, u)  # b x K x M
    return base - (c[..., None, None] * v.unsqueeze(-2)) * proj.unsqueeze(-1)


def estimate_bounds(centre: Tensor, v: Tensor, coef: Tensor) -> tuple[Tensor, Tensor]:
    """Bounds on mean_s VaR(a_ks + v coef_ks) from ``centre`` = mean_s VaR(a_ks).

    VaR is monotone and shifts with a constant, and a + v c lies between a + c min(v) and
    a + c max(v) (in either order, by the sign of c), so each VaR moves by at most those ends.

    Args:
        centre: ``P x K`` mean over s of VaR(a_ks), for each x' (P) and fantasy (K).
        v: ``b x P x m`` the rank-one direction per candidate and x'.
        coef: ``b x P x K x M`` its coefficient per fantasy and sample.

    Returns:
        ``(lower, upper)``, each ``b x P x K``.
    """
    v_lo, v_hi = v.amin(-1)[:, :, None, None], v.amax(-1)[:, :, None, None]
    ends = torch.stack([coef * v_lo, coef * v_hi])  # 2 x b x P x K x M
    return centre + ends.amin(0).mean(-1), centre + ends.amax(0).mean(-1)


def var_estimate(mean: Tensor, root: Tensor, eps: Tensor, masses: Tensor, alpha: float,
                 measure: Measure = weighted_var) -> Tensor:
    """E[VaR] (or E[``measure``]) over samples ``mean + root @ eps``.

    Args:
        mean: ``batch x m`` means over W.
        root: ``batch x m x m`` covariance roots.
        eps: ``S x m`` base samples, or ``batch x S x m``.
        masses: ``m`` weights of W.

    Returns:
        ``batch`` averages over the S samples of the weighted VaR.
    """
    samples = mean.unsqueeze(-2) + eps @ root.transpose(-1, -2)  # batch x S x m
    return measure(samples, masses, alpha).mean(-1)


@dataclass
class WSet:
    """The W used in every estimate: points (``m x d_z``) and weights (``m``)."""

    points: Tensor
    weights: Tensor


class _Posterior:
    """Posterior means and covariances of f (standardized scale) from a fitted ``SingleTaskGP``."""

    def __init__(self, model: SingleTaskGP) -> None:
        base = PosteriorMarginals(model)
        self.kernel = base.kernel
        self.train_X = base.train_X
        self.constant = base.constant
        self.weights = base.weights
        self.L_inv = base.L_inv
        self.noise = model.likelihood.noise.detach().reshape(())
        self.y_mean, self.y_std = base.y_mean, base.y_std

    def project(self, Q: Tensor) -> tuple[Tensor, Tensor]:
        """``... x p x d`` -> the prior-to-posterior pieces ``(mean ... x p, V ... x p x n)``."""
        cross = self.kernel.forward(Q, self.train_X)  # ... x p x n
        return self.constant + cross @ self.weights, cross @ self.L_inv.transpose(-1, -2)

    def cov(self, Q1: Tensor, V1: Tensor, Q2: Tensor, V2: Tensor) -> Tensor:
        """Posterior covariance between ``... x p x d`` and ``... x q x d`` (``... x p x q``)."""
        return self.kernel.forward(Q1, Q2) - V1 @ V2.transpose(-1, -2)


def _with_w(x: Tensor, w: Tensor) -> Tensor:
    """``... x d_x`` and ``m x d_z`` -> ``... x m x (d_x + d_z)``."""
    shape = (*x.shape[:-1], w.shape[0])
    return torch.cat([x.unsqueeze(-2).expand(*shape, x.shape[-1]), w.expand(*shape, w.shape[-1])],
                     dim=-1)


class FastRhoKG:
    """The batched estimator of one iteration: risk estimates under the current model and the
    fantasy value of candidates, both in the model's original output scale.

    Args:
        model: the fitted GP.
        w: the W set.
        alpha: risk level.
        past_x: ``P x d_x`` distinct past x.
        eps_now: ``M x m`` base samples for E_n.
        eps_fantasy: ``K x M x m`` base samples for E_{n+1}, one set per fantasy (a call with
            fewer fantasies uses the first ones).
        root: how a fantasy covariance Sigma' = Sigma - v v^T is factored for sampling:
            ``"update"`` (default) uses the exact square root L (I - c u u^T) of the current
            factor L (:func:`updated_noise`), O(m^2); ``"cholesky"`` factors Sigma' afresh, O(m^3),
            which maps the base samples exactly as BoRisk's GPyTorch sampling does. Both give
            samples of the same distribution from the same base samples.
        measure: the risk measure of a sample over W (default VaR; CVaR for a CVaR cell, see
            :data:`MEASURES`); the pruning's bounds (:func:`estimate_bounds`) hold for any measure
            that is monotone and shifts with a constant, as both are.
    """

    def __init__(self, model: SingleTaskGP, w: WSet, alpha: float, past_x: Tensor,
                 eps_now: Tensor, eps_fantasy: Tensor, root: str = "update",
                 measure: Measure = weighted_var) -> None:
        if root not in ("update", "cholesky"):
            raise ValueError(f"root must be 'update' or 'cholesky', got {root!r}")
        self.post = _Posterior(model)
        self.measure = measure
        self.w, self.alpha, self.past_x, self.root = w, alpha, past_x, root
        self.eps_now, self.eps_fantasy = eps_now, eps_fantasy
        with torch.no_grad():
            self.A_past = _with_w(past_x, w.points)  # P x m x d
            self.mean_past, self.V_past = self.post.project(self.A_past)
            self.cov_past = self.post.cov(self.A_past, self.V_past, self.A_past, self.V_past)
            self.now_past = self.estimate_now(past_x)
            if root == "update":  # candidate-independent: L_p and L_p eps for every past x
                self.L_past = sample_root(self.cov_past)  # P x m x m
                self.base_past = self._base(self.L_past)  # P x K x M x m
                self.mean_base_past = self.mean_past[:, None, None, :] + self.base_past
                # mean over samples of VaR(mean + L eps_k), P x K: the centre of the bound on
                # every fantasy's estimate at a past x' (see :meth:`_full_search_update`)
                self.var_base_past = measure(self.mean_base_past, w.weights, alpha).mean(-1)

    def estimate_now(self, x: Tensor, weights: Tensor | None = None,
                     measure: Measure | None = None) -> Tensor:
        """E_n[VaR_alpha(F(x, W))] (the estimator's measure) for ``b x d_x`` -> ``b`` (original
        scale), with the W set's weights or ``weights`` (``m``) instead, and its measure or
        ``measure`` instead."""
        A = _with_w(x, self.w.points)
        mean, V = self.post.project(A)
        root = sample_root(self.post.cov(A, V, A, V))
        weights = self.w.weights if weights is None else weights
        value = var_estimate(mean, root, self.eps_now, weights, self.alpha, measure or self.measure)
        return value * self.post.y_std + self.post.y_mean

    def _base(self, L: Tensor) -> Tensor:
        """``... x m x m`` roots -> ``... x K x M x m`` = L eps_k for every fantasy k."""
        K, M, m = self.eps_fantasy.shape
        flat = self.eps_fantasy.reshape(K * M, m) @ L.transpose(-1, -2)
        return flat.reshape(*L.shape[:-2], K, M, m)

    def fantasy_estimates(self, candidates: Tensor, xi: Tensor, eps: Tensor,
                          inner: Tensor | None = None, keep: dict | None = None,
                          prune: bool = False) -> Tensor:
        """E_{n+1,k}[VaR] under the fantasy at each candidate.

        Args:
            candidates: ``b x d`` points (x, w) where the fantasy observation is made.
            xi: ``K`` standard-normal fantasy base samples.
            eps: ``K x M x m`` base samples for the estimates.
            inner: ``b x K x d_x`` one x' per candidate and fantasy (two-time-scale reuse); if
                None, every x' of S = {x} union past x is evaluated.
            keep: with the ``"update"`` root and ``inner=None``, filled with what
                :meth:`remembered_estimates` needs about the candidates' own x.
            prune: with the ``"update"`` root and ``inner=None``, estimates at past x' that
                provably cannot be the largest over S for any fantasy are not computed and come
                back as ``-inf``; the max over S, its argmax and their gradients are unchanged
                (see :meth:`_full_search_update`).

        Returns:
            ``b x J x K`` estimates, J = 1 + P for the whole of S (x first, then ``past_x`` in
            order), or ``b x 1 x K`` with ``inner`` (each fantasy at its own x').
        """
        post, d_x = self.post, self.past_x.shape[-1]
        b, P = candidates.shape[0], self.past_x.shape[0]
        eps = eps[: xi.shape[0]]
        c = candidates.unsqueeze(-2)  # b x 1 x d
        _, V_c = post.project(c)
        var_c = post.cov(c, V_c, c, V_c)[..., 0, 0]  # b
        scale = (var_c + post.noise).sqrt()  # predictive std at c
        if inner is None and self.root == "update":
            return self._full_search_update(candidates, c, V_c, scale, xi, eps, keep, prune)
        if inner is None:
            A_x = _with_w(candidates[:, :d_x], self.w.points).unsqueeze(1)  # b x 1 x m x d
            mean_x, V_x = post.project(A_x)
            cov_x = post.cov(A_x, V_x, A_x, V_x)
            A = torch.cat([A_x, self.A_past.expand(b, P, *self.A_past.shape[1:])], dim=1)
            mean = torch.cat([mean_x, self.mean_past.expand(b, P, -1)], dim=1)  # b x J x m
            V = torch.cat([V_x, self.V_past.expand(b, P, *self.V_past.shape[1:])], dim=1)
            cov = torch.cat([cov_x, self.cov_past.expand(b, P, *self.cov_past.shape[1:])], dim=1)
        else:
            A = _with_w(inner, self.w.points)  # b x K x m x d
            mean, V = post.project(A)
            cov = post.cov(A, V, A, V)
        # Sigma_n(A, c): b x J x m
        J = A.shape[1]
        cross = post.cov(A, V, c.unsqueeze(1).expand(-1, J, -1, -1),
                         V_c.unsqueeze(1).expand(-1, J, -1, -1)).squeeze(-1)
        v = cross / scale[:, None, None]
        K = xi.shape[0]
        if self.root == "cholesky":
            root = sample_root(cov - v.unsqueeze(-1) * v.unsqueeze(-2))  # b x J x m x m
            if inner is None:  # every fantasy k at every x' j: b x J x K x M x m
                M, m = eps.shape[-2:]
                # one (K M) x m by m x m product per (candidate, x'): BLAS-sized
                noise = (eps.reshape(K * M, m) @ root.transpose(-1, -2)).reshape(
                    *root.shape[:-2], K, M, m)
            else:  # fantasy k at its own x' only (j = k): b x K x M x m
                noise = torch.einsum("kst,bkmt->bksm", eps, root)
        else:  # "update" with inner (the whole of S is :meth:`_full_search_update`)
            L = sample_root(cov)  # b x K x m x m
            base = torch.einsum("kst,bkmt->bksm", eps, L)  # b x K x M x m
            noise = _diagonal_update(base, L, v, eps)
        if inner is None:
            fantasy_mean = mean.unsqueeze(-2) + v.unsqueeze(-2) * xi[:, None]  # b x J x K x m
            samples = fantasy_mean.unsqueeze(-2) + noise
        else:
            fantasy_mean = mean + v * xi[:, None]  # b x K x m
            samples = (fantasy_mean.unsqueeze(-2) + noise).unsqueeze(1)
        values = self.measure(samples, self.w.weights, self.alpha).mean(-1)  # b x J x K
        return values * post.y_std + post.y_mean


    def _full_search_update(self, candidates: Tensor, c: Tensor, V_c: Tensor, scale: Tensor,
                            xi: Tensor, eps: Tensor, keep: dict | None = None,
                            prune: bool = False) -> Tensor:
        """:meth:`fantasy_estimates` over the whole of S with the ``"update"`` root, the hot path.

        The past x' part never copies its candidate-independent pieces per candidate: their
        cross-covariances with the candidates come from two GEMMs over all (x', w) rows at once,
        the rank-one factors from one multi-right-hand-side triangular solve per x', and the
        samples from one fused multiply-add, mean + L eps + v (xi_k - c u^T eps) (see
        :func:`updated_noise`), with mean + L eps precomputed.

        Pruning (``prune``). A past x' sample row is a + v_j coef_ks with a = mean + L eps_ks fixed
        for the iteration; VaR is monotone and shifts with a constant, so
        |VaR(a + b) - VaR(a)| <= max |b|, and the fantasy-k estimate at x' j lies within
        mean_s VaR(a_jks) +- mean_s |coef_ks| max |v_j|. A pair (candidate, x' j) whose upper bound
        falls below the largest lower bound over S (the candidate's own x counts exactly) for
        every fantasy cannot hold any max: its M x m samples are never formed and its K
        estimates are ``-inf``. The pairs kept are computed with the same operations on the same
        numbers as without pruning (elementwise, then reductions along the same dimensions), so
        the max over S and its gradient are bit for bit the same; the test suite checks this.
        Most past x' lie far from a candidate (max |v_j| near 0), which is what makes it pay.

        Returns:
            ``b x (1 + P) x K`` estimates (original scale).
        """
        post, w, d_x = self.post, self.w, self.past_x.shape[-1]
        b, P, m = candidates.shape[0], self.past_x.shape[0], w.points.shape[0]
        K = xi.shape[0]
        # the candidate's own x: b x m points
        A_x = _with_w(candidates[:, :d_x], w.points)
        mean_x, V_x = post.project(A_x)
        cov_x = post.cov(A_x, V_x, A_x, V_x)  # b x m x m
        L_x = sample_root(cov_x)
        v_x = post.cov(A_x, V_x, c, V_c).squeeze(-1) / scale[:, None]  # b x m
        base_x = self._base(L_x)[:, :K]  # b x K x M x m
        noise_x = updated_noise(base_x, L_x, v_x, eps)
        if keep is not None:  # the candidates' x become fixed x' of the two-time-scale memory
            keep.update(A=A_x.detach(), V=V_x.detach(), L=L_x.detach(),
                        mean_base=(mean_x[:, None, None, :] + base_x).detach())
        samples_x = (mean_x[:, None, None, :] + v_x[:, None, None, :] * xi[:, None, None]) + noise_x
        # the past x': Sigma_n(A_past, c) for all P m rows and b candidates at once
        rows = self.A_past.reshape(P * m, -1)
        cross = post.kernel.forward(rows, candidates) - self.V_past.reshape(P * m, -1) @ V_c.squeeze(-2).T
        v_p = (cross / scale).reshape(P, m, b)  # P x m x b
        u = torch.linalg.solve_triangular(self.L_past, v_p, upper=False)  # P x m x b
        uu = (u * u).sum(-2).clamp(max=1.0 - 1e-12)  # P x b, < 1 in exact arithmetic
        cc = torch.where(uu > 1e-12, (1 - (1 - uu).sqrt()) / uu.clamp_min(1e-12), 0.5)
        proj = torch.einsum("kst,ptb->bpks", eps, u)  # u^T eps: b x P x K x M
        coef = xi[:, None] - cc.T[:, :, None, None] * proj  # b x P x K x M
        v_p = v_p.permute(2, 0, 1).contiguous()  # b x P x m; contiguous m: the fused add below is 5x faster
        values_x = self.measure(samples_x, w.weights, self.alpha).mean(-1)  # b x K
        if not prune:
            samples_p = torch.addcmul(self.mean_base_past[:, :K], v_p[:, :, None, None, :],
                                      coef.unsqueeze(-1))
            values_p = self.measure(samples_p, w.weights, self.alpha).mean(-1)  # b x P x K
        else:
            values_p = self._pruned_past_values(values_x, v_p, coef, K)
        values = torch.cat([values_x.unsqueeze(1), values_p], dim=1)
        return values * post.y_std + post.y_mean

    def _pruned_past_values(self, values_x: Tensor, v_p: Tensor, coef: Tensor, K: int) -> Tensor:
        """The ``b x P x K`` past-x' estimates of :meth:`_full_search_update`, ``-inf`` for the
        (candidate, x') pairs that cannot hold the max over S (its docstring has the bound).

        Args:
            values_x: ``b x K`` the candidates' own-x estimates (standardized scale).
            v_p: ``b x P x m`` rank-one factors; coef: ``b x P x K x M`` their coefficients.
        """
        b, P = v_p.shape[:2]
        grad = torch.is_grad_enabled() and (v_p.requires_grad or coef.requires_grad)
        values_p = torch.full((b, P, K), -math.inf, dtype=coef.dtype)
        with torch.no_grad():
            lower_p, upper_p = estimate_bounds(self.var_base_past[:, :K], v_p, coef)  # b x P x K
            lower = torch.maximum(values_x, lower_p.amax(1))  # b x K
            # a margin far above rounding (bounds and estimates are within ulps of exact)
            margin = 1e-8 * (1.0 + lower.abs())
            live = upper_p >= (lower - margin).unsqueeze(1)  # b x P x K
            bi, pj, kk = live.nonzero(as_tuple=True)
            samples = torch.addcmul(self.mean_base_past[pj, kk], v_p[bi, pj][:, None, :],
                                    coef[bi, pj, kk].unsqueeze(-1))  # r x M x m
            kept = self.measure(samples, self.w.weights, self.alpha).mean(-1)  # r
            values_p.index_put_((bi, pj, kk), kept)
            if not grad:  # raw scoring, values at solutions: done
                return values_p
            # With a gradient, only the x' that hold a max carry one. They are recomputed with
            # autograd as whole (b, x') pairs, all K fantasies, so that the gradient of v_p sums
            # over (k, s) in the same order as the computation without pruning.
            best = torch.cat([values_x.unsqueeze(1), values_p], dim=1).argmax(1)  # b x K
            winners = torch.zeros(b, P + 1, dtype=torch.bool)
            winners.scatter_(1, best, True)
            bi, pj = winners[:, 1:].nonzero(as_tuple=True)
            values_p = values_p.masked_fill(winners[:, 1:].unsqueeze(-1), 0.0)
        samples = torch.addcmul(self.mean_base_past[pj, :K], v_p[bi, pj][:, None, None, :],
                                coef[bi, pj].unsqueeze(-1))  # r x K x M x m
        kept = self.measure(samples, self.w.weights, self.alpha).mean(-1)  # r x K
        return values_p.index_put((bi, pj), kept)


    def remembered_estimates(self, candidates: Tensor, xi: Tensor, eps: Tensor, index: Tensor,
                             kept: dict) -> Tensor:
        """E_{n+1,k}[VaR] of each fantasy k at its remembered x' (two-time-scale reuse), with the
        ``"update"`` root, from cached factors: no Cholesky factor is computed here.

        Args:
            candidates: ``b x d`` the current points (x, w).
            xi, eps: as in :meth:`fantasy_estimates`.
            index: ``b x K`` the remembered x' as positions in S: 0 is the candidate's x at the
                time of the search (its factors in ``kept``), j >= 1 is ``past_x[j - 1]``.
            kept: the ``keep`` dict filled by the full search.

        Returns:
            ``b x K`` estimates (original scale); equal to :meth:`fantasy_estimates` with ``inner``
            set to those x' (which factors them afresh).
        """
        post = self.post
        c = candidates.unsqueeze(-2)  # b x 1 x d
        _, V_c = post.project(c)
        var_c = post.cov(c, V_c, c, V_c)[..., 0, 0]
        scale = (var_c + post.noise).sqrt()  # b
        K = xi.shape[0]
        own = (index == 0)[..., None, None]  # b x K x 1 x 1
        past = (index - 1).clamp_min(0)  # b x K
        A = torch.where(own, kept["A"][:, None], self.A_past[past])  # b x K x m x d
        V = torch.where(own, kept["V"][:, None], self.V_past[past])  # b x K x m x n
        L = torch.where(own, kept["L"][:, None], self.L_past[past])  # b x K x m x m
        k_range = torch.arange(K)
        mean_base = torch.where(own, kept["mean_base"][:, k_range],
                                self.mean_base_past[past, k_range])  # b x K x M x m
        cross = post.kernel.forward(A, c.unsqueeze(1)).squeeze(-1) - (V @ V_c.transpose(-1, -2)
                                                                      .unsqueeze(1)).squeeze(-1)
        v = cross / scale[:, None, None]  # b x K x m
        u = torch.linalg.solve_triangular(L, v.unsqueeze(-1), upper=False).squeeze(-1)
        uu = (u * u).sum(-1).clamp(max=1.0 - 1e-12)
        cc = torch.where(uu > 1e-12, (1 - (1 - uu).sqrt()) / uu.clamp_min(1e-12), 0.5)
        proj = torch.einsum("kst,bkt->bks", eps[:K], u)  # b x K x M
        coef = xi[:, None] - cc[..., None] * proj  # b x K x M
        samples = mean_base + v.unsqueeze(-2) * coef.unsqueeze(-1)
        values = self.measure(samples, self.w.weights, self.alpha).mean(-1)  # b x K
        return values * post.y_std + post.y_mean


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
            kept = {key: value[:b] for key, value in self.kept.items()}
            values = est.remembered_estimates(candidates, self.xi, self.eps, self.index[:b], kept)
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


class _FixedW(AcquisitionFunction):
    """``acq`` as a function of x alone, each of the b restarts at its own fixed w (``b x d_z``)."""

    def __init__(self, acq: RhoKGAcquisition, w: Tensor) -> None:
        super().__init__(model=acq.model)
        self.acq, self.w = acq, w

    def forward(self, X: Tensor) -> Tensor:
        return self.acq(torch.cat([X, self.w.unsqueeze(-2).expand(*X.shape[:-1], -1)], dim=-1))


#: Values of the options that choose between the method and BoRisk's released code (first: default).
ACQ_WEIGHTS = ("mass", "uniform")
REFINE = ("best", "worst")
TTS_RESET = ("batch", "iteration")
CVAR_FORMULAS = ("exact", "released")


#: rho-KG^apx's fixed seconds an iteration (base samples, the current best, the recommendation).
RHOKG_FIXED_S = 0.3
#: rho-KG^apx's seconds per acquisition evaluation weighted by :func:`rhokg_evaluations`, at |W| = 100,
#: M = 10 and 40 observations (the cost grows about as |W|^(1/2) and with the data, the past x of S):
#: calibrated so that the paper grid's rho-KG^apx cells keep the estimate of the table it replaced
#: (3.0-5.1 s an iteration on the discrete synthetic problems, 12 s on portfolio and 10 s on robot
#: pushing). The model gives 2.7 s on Branin, 4.7 s on Hartmann-(2,1), 11.2 s on portfolio and
#: 12.0 s on robot pushing; their paper-grid cells measured 2.8, 3.5, 10.6 and 9.4 s (means of 6-10
#: seeds on a shared machine).
RHOKG_EVALUATION_S = 2.62e-4
#: The acquisition evaluations a rho-KG^apx start typically makes before L-BFGS-B converges, in the
#: first phase and in the second (counted at the paper's settings on Branin: 708 an iteration in all).
RHOKG_CONVERGED = (25, 100)


def rhokg_evaluations(d: int, options: Mapping[str, object]) -> float:
    """The acquisition evaluations of one rho-KG^apx proposal in (x, w) of dimension ``d``, each
    counted once per fantasy: the raw candidates (restarts_per_dim x d x raw_per_restart) at
    ``low_fantasies``, then the restarts' L-BFGS-B evaluations at ``num_fantasies``: every restart for
    at most maxiter / 25 steps, the refined tenth for at most ``maxiter``, a few evaluations a step,
    both stopping sooner when they converge (:data:`RHOKG_CONVERGED`). Measured by counting in
    ``tests/algorithms/test_options.py``."""
    restarts = options["restarts_per_dim"] * d
    raw = restarts * options["raw_per_restart"]
    first = min(1 + 3 * (options["maxiter"] // 25), RHOKG_CONVERGED[0])  # a few evaluations a step
    second = min(1 + 2 * options["maxiter"], RHOKG_CONVERGED[1])
    low = min(options["low_fantasies"], options["num_fantasies"])
    return low * raw + options["num_fantasies"] * (restarts * first + math.ceil(restarts / 10) * second)


class RhoKGApx(Algorithm):
    """rho-KG^apx, for VaR or CVaR. The defaults are BoRisk's paper settings; the last four options
    choose between the method (their default) and what BoRisk's released code does where it departs
    from the method (see the module docstring and :class:`RhoKGApxReleased`).

    Its options are declared in :attr:`options`.
    """

    name = "rhokg-apx"
    risks = frozenset({"var", "cvar"})
    candidates = "xz"  # its acquisition moves (x, w)
    evaluation_batch = 4  # a value costs 100-1000 times V-UCB's per x
    z_sample_options = ("num_w_samples",)

    @classmethod
    def proposal_cost(cls, z_kind: str) -> tuple[float, float, float, float]:
        """See :meth:`Algorithm.proposal_cost`: at the complexity study's reduced effort (0.29 s at
        |D| = 40, |Dz| = 64 and 1.4 s at 40 x 256 on the development machine)."""
        return (0.05, 0.3, 1.0, 1.5)

    @classmethod
    def reduced_options(cls, z_kind: str) -> dict | None:
        """See :meth:`Algorithm.reduced_options`: fewer restarts and raw samples, at most 100 L-BFGS-B
        iterations (K, M and the two-time-scale rule unchanged). At BoRisk's settings one iteration
        takes 10 to 30 s, which alone would exceed the smoke grid's budget; this is about 0.5 s."""
        return {"restarts_per_dim": 2, "raw_per_restart": 10, "maxiter": 100}

    #: The name the random streams are derived from: variants of the method share rho-KG^apx's
    #: base samples and search starts (common random numbers), so they differ only by their options.
    stream_name = "rhokg-apx"

    options: ClassVar[tuple[Option, ...]] = (
        Option("num_fantasies", int, 10, "K, fantasy observations at a candidate (x, w).", low=1),
        Option("num_samples", int, 10, "M, joint posterior samples of f over W in every estimate of "
               "E[VaR].", low=1),
        Option("low_fantasies", int, 4, "fantasies used to score the raw candidates (at most "
               "``num_fantasies``).", low=1),
        Option("restarts_per_dim", int, 10, "L-BFGS-B restarts per dimension of (x, w), d_x + d_z.", low=1),
        Option("raw_per_restart", int, 50, "raw scrambled Sobol candidates (x, w) scored per restart; the "
               "restarts are drawn from them.", low=1),
        Option("eta", float, 2.0, "the restarts are drawn with weights exp(eta z) on the raw candidates' "
               "z-scores, the best always kept (0: uniformly).", low=0),
        Option("maxiter", int, 1000, "L-BFGS-B iterations of the second phase, which refines a tenth of "
               "the first phase's solutions (see ``refine``); the first phase runs maxiter / 25, rounded "
               "down.", low=1),
        Option("batch_size", int, 5, "first-phase restarts optimized together as one L-BFGS-B problem.",
               low=1),
        Option("tts_frequency", int, 10, "two-time-scale: the argmax over S of each fantasy is searched at "
               "every tts_frequency-th evaluation and reused in between (1: at every evaluation).", low=1),
        Option("num_w_samples", int, 10, "L, samples of Z drawn once per iteration as the W of every "
               "estimate (a discrete Z's W is its support).", low=1, z_kind="continuous"),
        Option("acq_weights", str, ACQ_WEIGHTS[0], "``\"mass\"``: the acquisition's inner VaR weights W by "
               "the masses of Z; ``\"uniform\"``: it ignores them, as BoRisk's ``AbsKG.__init__`` does by "
               "testing ``kwargs.get(\"weights\")`` for a named parameter (the recommendation and the "
               "current best keep the masses, as BoRisk's ``current_best`` does). The same for a "
               "continuous Z, whose L samples have equal weights anyway.", choices=ACQ_WEIGHTS),
        Option("refine", str, REFINE[0], "``\"best\"``: refine the best tenth of the first-phase "
               "solutions; ``\"worst\"``: the lowest-valued tenth, as BoRisk's ``optimize_outer`` does by "
               "sorting ascending.", choices=REFINE),
        Option("tts_reset", str, TTS_RESET[0], "``\"batch\"``: the two-time-scale memory is reset before "
               "every batch of restarts and before the values at the solutions are taken, which then "
               "come from a fresh search over S; ``\"iteration\"``: reset only at the start of each of "
               "the two phases, as BoRisk's ``optimize_outer`` does (a batch starts from the previous "
               "batch's remembered argmaxes, and the values that rank the solutions are L-BFGS-B's last "
               "evaluation, with the memory).", choices=TTS_RESET),
        Option("cvar_formula", str, CVAR_FORMULAS[0], "in a CVaR cell, ``\"exact\"``: every estimate "
               "takes CVaR_alpha of each sample (:func:`problems.weighted_cvar`); ``\"released\"``: "
               "BoRisk's ``InnerRho(CVaR=True)``, the equal-weight mean of the n - int(n (1 - alpha)) "
               "smallest values in the acquisition (:func:`borisk_cvar_equal`) and the whole-VaR-atom, "
               "renormalized weighted mean in the current best and the recommendation "
               "(:func:`borisk_cvar_weighted`). Ignored for VaR.", choices=CVAR_FORMULAS),
    )

    @classmethod
    def iteration_seconds(cls, size: ProblemSize, options: Mapping[str, object]) -> float:
        """See :mod:`algorithms.cost`: a fixed part, then in proportion to the acquisition's
        evaluations (:func:`rhokg_evaluations`), each costing more with |W| (the support of a
        discrete Z, ``num_w_samples`` of a continuous one), M and the data (the past x in S), as the
        square root of the mean number of observations: in proportion to it, the model was 2-2.4
        times above what f6's cells measured (n from 80) and 1.7 times below the newsvendor's (n
        from 6); the paper's four calibration problems (n from 33 to 80 on average) stay within
        25 % of their measured rates either way."""
        w = size.z_size or options["num_w_samples"]
        each = (RHOKG_EVALUATION_S * (w / 100) ** 0.5 * options["num_samples"] / 10
                * (size.mean_data / 40) ** 0.5)
        return RHOKG_FIXED_S + each * rhokg_evaluations(size.d_x + size.d_z, options)

    def __init__(self, problem: Problem, seed_root: int, num_fantasies: int = 10,
                 num_samples: int = 10, low_fantasies: int = 4, restarts_per_dim: int = 10,
                 raw_per_restart: int = 50, eta: float = 2.0, maxiter: int = 1000,
                 batch_size: int = 5, tts_frequency: int = 10, num_w_samples: int = 10,
                 acq_weights: str = ACQ_WEIGHTS[0], refine: str = REFINE[0],
                 tts_reset: str = TTS_RESET[0], cvar_formula: str = CVAR_FORMULAS[0],
                 risk: str = "var") -> None:
        super().__init__(problem, seed_root, risk=risk)
        for key, value in {"num_fantasies": num_fantasies, "num_samples": num_samples,
                           "low_fantasies": low_fantasies, "restarts_per_dim": restarts_per_dim,
                           "raw_per_restart": raw_per_restart, "maxiter": maxiter,
                           "batch_size": batch_size, "tts_frequency": tts_frequency,
                           "num_w_samples": num_w_samples}.items():
            positive_int(self.name, key, value)
        positive_float(self.name, "eta", eta, allow_zero=True)
        for key, value, valid in (("acq_weights", acq_weights, ACQ_WEIGHTS),
                                  ("refine", refine, REFINE), ("tts_reset", tts_reset, TTS_RESET),
                                  ("cvar_formula", cvar_formula, CVAR_FORMULAS)):
            if value not in valid:
                raise ValueError(f"{self.name}: {key} must be one of {', '.join(valid)}, got {value!r}")
        self.K, self.M, self.low = num_fantasies, num_samples, min(low_fantasies, num_fantasies)
        self.d = problem.d_x + problem.d_z
        self.num_restarts = restarts_per_dim * self.d
        self.raw = self.num_restarts * raw_per_restart
        self.eta, self.maxiter, self.batch_size = eta, maxiter, batch_size
        self.tts_frequency, self.L = tts_frequency, num_w_samples
        self.acq_weights, self.refine, self.tts_reset = acq_weights, refine, tts_reset
        self.cvar_formula = cvar_formula
        #: the acquisition's measure, and the current best's and recommendation's (MEASURES)
        self.measure, self.best_measure = measures(self.risk, cvar_formula)

    # -- per-iteration randomness -------------------------------------------------------------
    def _w_set(self, t: int | str) -> WSet:
        z = self.problem.z
        if isinstance(z, DiscreteZ):
            return WSet(z.points, z.masses)
        points = z.sample(self.L, generator(self.seed_root, self.stream_name, "w", t))
        return WSet(points, torch.full((self.L,), 1.0 / self.L, dtype=torch.float64))

    def _base_samples(self, t: int | str, m: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """eps_now (M x m), xi (K), eps (K x M x m), and the low-fantasy xi and eps."""
        seed = derive_seed(self.seed_root, self.stream_name, "base", t) % (2**31)
        eps_now = draw_sobol_normal_samples(m, self.M, dtype=torch.float64, seed=seed)
        xi = draw_sobol_normal_samples(1, self.K, dtype=torch.float64, seed=seed + 1).reshape(-1)
        eps = draw_sobol_normal_samples(self.K * m, self.M, dtype=torch.float64, seed=seed + 2)
        eps = eps.reshape(self.M, self.K, m).transpose(0, 1).contiguous()
        xi_low = draw_sobol_normal_samples(1, self.low, dtype=torch.float64,
                                           seed=seed + 3).reshape(-1)
        return eps_now, xi, eps, xi_low

    def estimator(self, model: SingleTaskGP, train_X: Tensor, t: int | str) -> FastRhoKG:
        """The estimator of iteration ``t`` on the current model and past x."""
        w = self._w_set(t)
        eps_now, _, eps, _ = self._base_samples(t, w.points.shape[0])
        return FastRhoKG(model, w, self.problem.alpha, self.observed_x(train_X), eps_now, eps,
                         measure=self.best_measure)

    def _iteration_estimator(self, model: SingleTaskGP, train_X: Tensor, t: int
                             ) -> tuple[FastRhoKG, float, tuple[Tensor, Tensor, Tensor]]:
        """The acquisition's estimator of iteration ``t`` (its W weighted as ``acq_weights`` says),
        the current best max over past x of E_n[VaR] (always with the masses, as BoRisk's
        ``current_best``), and the fantasy base samples (xi, eps, low-fantasy xi)."""
        w = self._w_set(t)
        eps_now, xi, eps, xi_low = self._base_samples(t, w.points.shape[0])
        w_acq = w
        if self.acq_weights == "uniform":
            w_acq = WSet(w.points, torch.full_like(w.weights, 1.0 / w.weights.numel()))
        est = FastRhoKG(model, w_acq, self.problem.alpha, self.observed_x(train_X), eps_now, eps,
                        measure=self.measure)
        same = w_acq is w and self.best_measure is self.measure
        now_past = est.now_past if same else est.estimate_now(est.past_x, w.weights, self.best_measure)
        return est, float(now_past.max()), (xi, eps, xi_low)

    # -- the algorithm ------------------------------------------------------------------------
    def propose(self, model: SingleTaskGP, t: int) -> Proposal:
        train_X = model.train_inputs[0]
        est, current_best, (xi, eps, xi_low) = self._iteration_estimator(model, train_X, t)
        rng = generator(self.seed_root, self.stream_name, "search", t)
        d_x = self.problem.d_x

        # raw samples, scored with fewer fantasies
        raw = torch.quasirandom.SobolEngine(self.d, scramble=True,
                                            seed=self.search_seed(t) % (2**31)).draw(
            self.raw, dtype=torch.float64)
        z = self.problem.z
        if isinstance(z, DiscreteZ):
            raw[:, d_x:] = z.points[torch.randint(z.size, (self.raw,), generator=rng)]
        else:
            low, high = z.bounds
            raw[:, d_x:] = low + (high - low) * raw[:, d_x:]
        low_acq = RhoKGAcquisition(model, est, xi_low, eps[: self.low], current_best, 1)
        with torch.no_grad():
            # chunks of 16 keep the b x |S| x m x m fantasy covariances near 100 MB
            scores = torch.cat([low_acq(chunk.unsqueeze(-2)) for chunk in raw.split(16)])
        starts = self._boltzmann_starts(raw, scores, rng)

        acq = RhoKGAcquisition(model, est, xi, eps, current_best, self.tts_frequency)
        bounds = self._bounds()
        discrete = isinstance(z, DiscreteZ)
        acq.tts_reset()  # the start of the first phase (the only reset there with "iteration")
        first = [self._optimize(acq, batch, bounds, self.maxiter // 25, discrete)
                 for batch in starts.split(self.batch_size)]
        solutions = torch.cat([s for s, _ in first])
        values = torch.cat([v for _, v in first])
        refine = max(1, math.ceil(self.num_restarts / 10))
        order = torch.argsort(values, descending=self.refine == "best")
        acq.tts_reset()  # the start of the second phase
        final, final_values = self._optimize(acq, solutions[order[:refine]], bounds, self.maxiter,
                                             discrete)
        i = int(final_values.argmax())
        x, wz = final[i, :d_x], final[i, d_x:]
        info = {"acq_value": float(final_values[i]), "current_best_estimate": current_best}
        return Proposal(x.detach().clone(), wz.detach().clone(), info)

    def acquisition_function(self, model: SingleTaskGP, t: int) -> Callable[[Tensor], Tensor]:
        """rho-KG^apx of iteration ``t`` at ``b x (d_x + d_z)`` candidates (x, w) -> ``b``, each with
        the full search over S (no two-time-scale reuse): the estimator and its past-x factors are
        built here once, as :meth:`propose` builds them once per iteration."""
        est, current_best, (xi, eps, _) = self._iteration_estimator(model, model.train_inputs[0], t)
        acq = RhoKGAcquisition(model, est, xi, eps, current_best, 1)

        def value(X: Tensor) -> Tensor:
            return acq(X.unsqueeze(-2))

        return value

    def _bounds(self) -> tuple[Tensor, Tensor]:
        lower = torch.zeros(self.d, dtype=torch.float64)
        upper = torch.ones(self.d, dtype=torch.float64)
        z = self.problem.z
        if not isinstance(z, DiscreteZ):
            lower[self.problem.d_x:], upper[self.problem.d_x:] = z.bounds
        return lower, upper

    def _boltzmann_starts(self, raw: Tensor, scores: Tensor, rng: torch.Generator) -> Tensor:
        """BoRisk's restart rule: multinomial on exp(eta * z-score), the best always included."""
        std = scores.std()
        z = (scores - scores.mean()) / std if float(std) > 0 else torch.zeros_like(scores)
        eta_z = self.eta * z
        weights = torch.exp(eta_z)
        while torch.isinf(weights).any():
            eta_z = eta_z * 0.5
            weights = torch.exp(eta_z)
        n = min(self.num_restarts, raw.shape[0])
        idx = torch.multinomial(weights, n, replacement=False, generator=rng)
        best = int(scores.argmax())
        if best not in idx.tolist():
            idx[-1] = best
        return raw[idx]

    def _optimize(self, acq: RhoKGAcquisition, starts: Tensor, bounds: tuple[Tensor, Tensor],
                  maxiter: int, fix_w: bool) -> tuple[Tensor, Tensor]:
        """L-BFGS-B from ``starts`` (``b x d``), all restarts summed into one problem as in BoRisk
        (so the two-time-scale memory always sees the same batch); for a discrete W each restart
        keeps its w and only x moves. The values at the solutions: with ``tts_reset="batch"`` from
        a fresh search over S (the memory is reset before and after); with ``"iteration"`` the
        last evaluation L-BFGS-B made (``gen_candidates_scipy``'s), with the memory carried on."""
        d_x = self.problem.d_x
        per_batch = self.tts_reset == "batch"
        if per_batch:
            acq.tts_reset()
        if fix_w:
            target: AcquisitionFunction = _FixedW(acq, starts[:, d_x:].clone())
            initial, lower, upper = starts[:, :d_x], bounds[0][:d_x], bounds[1][:d_x]
        else:
            target, initial, lower, upper = acq, starts, bounds[0], bounds[1]
        with warnings.catch_warnings(record=True):  # kinks of VaR end line searches "ABNORMAL"
            solutions, values = gen_candidates_scipy(
                initial.unsqueeze(-2), target, lower_bounds=lower, upper_bounds=upper,
                options={"maxiter": maxiter}, use_parallel_mode=False)
        solutions = solutions.squeeze(-2).detach()
        if fix_w:
            solutions = torch.cat([solutions, starts[:, d_x:]], dim=-1)
        if not per_batch:
            return solutions, values.detach().reshape(-1)
        acq.tts_reset()
        with torch.no_grad():  # the values at the solutions, with a fresh search over S
            values = acq(solutions.unsqueeze(-2))
        return solutions, values.detach()

    def recommend(self, model: SingleTaskGP, train_X: Tensor) -> Recommendation:
        # base samples from a stream of the data size, so the recommendation is reproducible
        est = self.estimator(model, train_X, f"recommend-{train_X.shape[0]}")
        i = int(est.now_past.argmax())
        return Recommendation(est.past_x[i].clone(), {"var_mean_rec": float(est.now_past[i])})


class RhoKGApxReleased(RhoKGApx):
    """rho-KG^apx as BoRisk's last public code runs it: :class:`RhoKGApx` with
    ``acq_weights="uniform"``, ``refine="worst"``, ``tts_reset="iteration"`` and (for CVaR)
    ``cvar_formula="released"`` (each can still be set back by its option; the other options are
    :class:`RhoKGApx`'s). Same random streams as ``rhokg-apx``, so on one seed the two differ only
    by these behaviours."""

    name = "rhokg-apx-released"
    #: What the released code does, option by option.
    RELEASED: ClassVar[dict[str, str]] = {"acq_weights": "uniform", "refine": "worst",
                                         "tts_reset": "iteration", "cvar_formula": "released"}
    options: ClassVar[tuple[Option, ...]] = with_defaults(RhoKGApx.options, **RELEASED)

    # the released defaults named, so that the signature (and ``--describe``) shows them
    def __init__(self, problem: Problem, seed_root: int, *,
                 acq_weights: str = RELEASED["acq_weights"], refine: str = RELEASED["refine"],
                 tts_reset: str = RELEASED["tts_reset"], cvar_formula: str = RELEASED["cvar_formula"],
                 **options: object) -> None:
        super().__init__(problem, seed_root, acq_weights=acq_weights, refine=refine,
                         tts_reset=tts_reset, cvar_formula=cvar_formula, **options)
