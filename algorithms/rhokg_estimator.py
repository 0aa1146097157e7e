"""The batched estimator of rho-KG^apx (:mod:`algorithms.rhokg`): risk estimates
E_n[VaR_alpha(F(x', W))] under the current model and the fantasy estimates E_{n+1,k}[VaR] of
candidates (x, w), with the sampling pieces they are built from (:func:`sample_root`,
:func:`updated_noise`, :func:`estimate_bounds`, :func:`var_estimate`) and the W set (:class:`WSet`).

Speed. After one fantasy observation at c every fantasy model has the same posterior covariance,
Sigma_n - Sigma_n(., c) Sigma_n(c, .) / (sigma_n^2(c) + noise), only the means differ, by
Sigma_n(., c) xi_k / sqrt(sigma_n^2(c) + noise). :class:`FastRhoKG` computes every mean and
covariance it needs from one Cholesky factor of the training covariance, batched over candidates,
x' in S, fantasies and samples; only the m x m Cholesky factors of the fantasy covariances (one
per candidate and x', shared by all fantasies) are left to LAPACK. The straightforward reference
(:mod:`algorithms.rhokg_reference`) computes the same number the way a port of BoRisk would:
BoTorch's ``condition_on_observations`` per candidate and a loop over x'. Both use
:func:`sample_root`, so with the same base samples they agree to rounding. The acquisition also
skips the past x' that provably cannot hold the max over S (:func:`estimate_bounds`,
:meth:`FastRhoKG._full_search_update`), which leaves every value and gradient bit for bit unchanged
and makes a proposal 2-4 times faster on a discrete Z.

The Cholesky jitter is a fixed 1e-8 of the mean variance (:data:`JITTER`) instead of GPyTorch's
add-on-failure jitter, so that the fast and the reference estimators are the same function.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from botorch.models import SingleTaskGP
from torch import Tensor

from algorithms.gp import PosteriorMarginals
from problems.risk import weighted_var

#: A risk measure of weighted samples: ``batch x m`` values, ``m`` masses, alpha -> ``batch``.
Measure = Callable[[Tensor, Tensor, float], Tensor]


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


def coherent_bounds(centre: Tensor, attained: Tensor, attained_centre: Tensor, v: Tensor, coef: Tensor,
                    rho_v: Tensor, rho_minus_v: Tensor) -> tuple[Tensor, Tensor]:
    """Tighter bounds than :func:`estimate_bounds` on mean_s rho(a_ks + v coef_ks) for a coherent
    lower-tail measure rho, one that is the minimum of expectations over a set of weights (CVaR,
    the mean of the k smallest values, the worst case; not VaR).

    Such a rho is superadditive and positively homogeneous, and rho(a) = w_a . a for the weights
    w_a that attain its minimum, so for every sample row a and scalar c:

        rho(a) + rho(c v) <= rho(a + c v) <= w_a . (a + c v) = w_a . a + c (w_a . v),

    with rho(c v) = c rho(v) for c >= 0 and |c| rho(-v) for c < 0 (the upper bound holds for any
    weights of the set; w_a . a = rho(a) makes it tight at c = 0). Where v is peaked (a
    cross-covariance with a candidate), w_a . v, a tail average, lies far below max(v).

    Args:
        centre: ``P x K`` mean over s of rho(a_ks), for each x' (P) and fantasy (K).
        attained: ``P x K x M x m`` the weights w_a at which rho(a_ks) is attained.
        attained_centre: ``P x K`` mean over s of w_a . a_ks.
        v: ``b x P x m`` the rank-one direction per candidate and x'.
        coef: ``b x P x K x M`` its coefficient per fantasy and sample.
        rho_v, rho_minus_v: ``b x P`` rho(v) and rho(-v).

    Returns:
        ``(lower, upper)``, each ``b x P x K``.
    """
    P, K, M, m = attained.shape
    b = v.shape[0]
    # w_a . v for every (candidate, x', fantasy, sample): one batched product per x'
    tail = torch.bmm(attained.reshape(P, K * M, m), v.permute(1, 2, 0)).view(P, K, M, b)
    upper = attained_centre + (coef * tail.permute(3, 0, 1, 2)).mean(-1)
    scaled = torch.where(coef >= 0, coef * rho_v[..., None, None], -coef * rho_minus_v[..., None, None])
    return centre + scaled.mean(-1), upper


def _reaches(upper: Tensor, lower: Tensor) -> Tensor:
    """``b x P x K``: the pairs whose upper bound reaches the best lower bound ``lower`` (``b x K``)
    over S, with a margin far above rounding (bounds and estimates are within ulps of exact)."""
    margin = 1e-8 * (1.0 + lower.abs())
    return upper >= (lower - margin).unsqueeze(1)


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
        attained: for a coherent ``measure`` (a minimum of expectations: CVaR, not VaR), the
            weights at which it is attained, ``batch x m`` values, ``m`` masses, alpha ->
            ``batch x m`` (:meth:`problems.measures.RiskMeasure.weights`); the pruning then uses
            the tighter :func:`coherent_bounds`. None: :func:`estimate_bounds`. Either way no
            value or gradient changes, only how many are left uncomputed.
    """

    def __init__(self, model: SingleTaskGP, w: WSet, alpha: float, past_x: Tensor,
                 eps_now: Tensor, eps_fantasy: Tensor, root: str = "update",
                 measure: Measure = weighted_var, attained: Measure | None = None) -> None:
        if root not in ("update", "cholesky"):
            raise ValueError(f"root must be 'update' or 'cholesky', got {root!r}")
        self.post = _Posterior(model)
        self.measure, self.attained = measure, attained
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
                # P x K x M x m: the weights at which each of those measures is attained
                if attained is not None:
                    self.attained_past = attained(self.mean_base_past, w.weights, alpha)
                    self.attained_centre = (self.attained_past * self.mean_base_past).sum(-1).mean(-1)

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
        Most past x' lie far from a candidate (max |v_j| near 0), which is what makes it pay. A
        coherent measure (CVaR) has tighter bounds, :func:`coherent_bounds`, with ``attained``.

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

        In two stages: first, for each (candidate, fantasy), the x' of the highest upper bound,
        usually the max, whose exact estimate then raises the lower bound that the other x' must
        reach (on Hartmann-6 (1,5) this leaves about 6 % of the pairs to estimate, against 37 % in
        one stage with the bounds of :func:`estimate_bounds`). Each estimate is a function of its own
        rows only, so which pairs are computed, and in which stage, changes no value.

        Args:
            values_x: ``b x K`` the candidates' own-x estimates (standardized scale).
            v_p: ``b x P x m`` rank-one factors; coef: ``b x P x K x M`` their coefficients.
        """
        b, P = v_p.shape[:2]
        grad = torch.is_grad_enabled() and (v_p.requires_grad or coef.requires_grad)
        values_p = torch.full((b, P, K), -math.inf, dtype=coef.dtype)
        with torch.no_grad():
            lower_p, upper_p = self._past_bounds(v_p, coef, K)  # b x P x K
            lower = torch.maximum(values_x, lower_p.amax(1))  # b x K
            top = upper_p.argmax(1, keepdim=True)  # b x 1 x K
            first = torch.zeros_like(upper_p, dtype=torch.bool).scatter_(1, top, True)
            first &= _reaches(upper_p, lower)
            self._estimate_pairs(values_p, first, v_p, coef)
            lower = torch.maximum(lower, values_p.amax(1))
            self._estimate_pairs(values_p, _reaches(upper_p, lower) & ~first, v_p, coef)
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

    def _past_bounds(self, v_p: Tensor, coef: Tensor, K: int) -> tuple[Tensor, Tensor]:
        """``b x P x K`` lower and upper bounds on the past-x' estimates: :func:`coherent_bounds`
        for a coherent measure, :func:`estimate_bounds` otherwise."""
        centre = self.var_base_past[:, :K]
        if self.attained is None:
            return estimate_bounds(centre, v_p, coef)
        masses = self.w.weights
        return coherent_bounds(centre, self.attained_past[:, :K], self.attained_centre[:, :K], v_p, coef,
                               self.measure(v_p, masses, self.alpha), self.measure(-v_p, masses, self.alpha))

    def _estimate_pairs(self, values_p: Tensor, pairs: Tensor, v_p: Tensor, coef: Tensor) -> None:
        """Fill ``values_p`` (``b x P x K``) at the ``pairs`` (a mask of its shape) with their
        estimates, mean over s of the measure of mean + L eps_ks + v coef_ks, without gradient."""
        bi, pj, kk = pairs.nonzero(as_tuple=True)
        samples = torch.addcmul(self.mean_base_past[pj, kk], v_p[bi, pj][:, None, :],
                                coef[bi, pj, kk].unsqueeze(-1))  # r x M x m
        values_p.index_put_((bi, pj, kk), self.measure(samples, self.w.weights, self.alpha).mean(-1))

    def remembered_estimates(self, candidates: Tensor, xi: Tensor, eps: Tensor, index: Tensor,
                             kept: dict) -> Tensor:
        """E_{n+1,k}[VaR] of each fantasy k at its remembered x' (two-time-scale reuse), with the
        ``"update"`` root, from cached factors: no Cholesky factor is computed here.

        Args:
            candidates: ``b x d`` the current points (x, w).
            xi, eps: as in :meth:`fantasy_estimates`.
            index: ``b x K`` the remembered x' as positions in S: 0 is the candidate's x at the
                time of the search (its factors in ``kept``), j >= 1 is ``past_x[j - 1]``.
            kept: the ``keep`` dict filled by the full search (for a batch of at least b: a
                smaller batch uses its first rows).

        Returns:
            ``b x K`` estimates (original scale); equal to :meth:`fantasy_estimates` with ``inner``
            set to those x' (which factors them afresh).
        """
        post = self.post
        c = candidates.unsqueeze(-2)  # b x 1 x d
        _, V_c = post.project(c)
        var_c = post.cov(c, V_c, c, V_c)[..., 0, 0]
        scale = (var_c + post.noise).sqrt()  # b
        K, b = xi.shape[0], candidates.shape[0]
        A, V, L, mean_base = self._remembered_factors(kept, index, b, K)
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

    def _remembered_factors(self, kept: dict, index: Tensor, b: int, K: int) -> tuple[Tensor, ...]:
        """The factors of each (candidate, fantasy)'s remembered x' for :meth:`remembered_estimates`:
        A ``b x K x m x d``, V ``b x K x m x n``, L ``b x K x m x m`` and mean + L eps_k ``b x K x M x
        m``, gathered from one table of the kept rows and the past x' each (built once per search
        and kept in ``kept``: choosing between the two per element took as long as the solves)."""
        if "tables" not in kept:
            # L as its transpose: LAPACK's factors are column-major, and a triangular solve
            # rounds differently on a row-major copy, so the gathered factors keep that layout
            K_kept = kept["mean_base"].shape[1]
            kept["tables"] = {"A": torch.cat([kept["A"], self.A_past]),
                              "V": torch.cat([kept["V"], self.V_past]),
                              "L_T": torch.cat([kept["L"].mT, self.L_past.mT]),
                              "mean_base": torch.cat([kept["mean_base"], self.mean_base_past[:, :K_kept]])}
        tables = kept["tables"]
        rows = torch.where(index == 0, torch.arange(b).unsqueeze(-1), kept["A"].shape[0] + index - 1)  # b x K
        return (tables["A"][rows], tables["V"][rows], tables["L_T"][rows].mT,
                tables["mean_base"][rows, torch.arange(K)])
