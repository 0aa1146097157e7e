"""The one-shot risk-averse knowledge gradient in closed form: BoTorch's computation without its
fantasy models (``engine = "fused"`` of ``botorch-risk`` and ``rhokg-oneshot``).

BoTorch's ``qMultiFidelityKnowledgeGradient`` (the reference, ``engine = "botorch"``) evaluates a
``b x (1 + F) x d`` batch (a query x_a = (x, z) and F fantasy solutions x'_f per t-batch) by

1. the posterior at x_a with observation noise and F fantasy observations
   y_f = mu(x_a) + sqrt(k(x_a, x_a) + sigma^2) eps_f (the fantasy sampler's base samples eps);
2. ``fantasize``: F x b GPs conditioned on (x_a, y_f), each a GPyTorch fantasy model;
3. each fantasy model's joint posterior at (x'_f, w_1), ..., (x'_f, w_m) (``AppendFeatures``), S
   samples mean + chol(cov) zeta (the inner sampler's base samples zeta), the risk measure of each
   sample's m values, their mean over S, then the mean over the F fantasies.

A fantasy observation at one point is a rank-one update of the posterior, so step 2 needs no
model: with the current GP's K_n = K(X, X) + sigma^2 I, V_f = L_n^{-1} K(X, U_f) for the m points
U_f = (x'_f, W), v_a = L_n^{-1} K(X, x_a), s_a = k(x_a, x_a) + sigma^2 - |v_a|^2 and
c_f = K(U_f, x_a) - V_f^T v_a,

    mean_f = mu_n(U_f) + c_f eps_f / sqrt(s_a),   cov_f = K(U_f, U_f) - V_f^T V_f - c_f c_f^T / s_a

(in the model's standardized units; the outcome transform scales both back). This module computes
exactly that for the whole batch at once, with the current GP's Cholesky factor and its inverse
computed once per iteration, and then step 3 as BoTorch does it: the same Cholesky factor of the
same covariance (``psd_safe_cholesky``, the same jitter rule), the same base samples, the same risk
measure (taken as its weights over the m values, :class:`SampleMeasure`, without a sort of the
samples). Its backward never forms the covariance's gradient (:class:`_SampleRisk`). Values and
gradients agree with BoTorch's to rounding (``tests/algorithms/test_oneshot_fused.py``);
``benchmarks/oneshot_kg_speedup.py`` times both.

**The gradient.** BoTorch 0.18.1 with GPyTorch 1.15.2 detaches the fantasy model's covariance cache
(GPyTorch's ``get_fantasy_strategy`` under its default ``detach_test_caches``, GPyTorch PR #2605), so
the one-shot KG's gradient with respect to the query x_a misses how the fantasy observation changes
the posterior covariance; its gradient with respect to the fantasy solutions, and every value, are
exact. ``gradient = "released"`` reproduces that gradient (here: v_a and s_a held constant inside
the covariance), ``gradient = "exact"`` differentiates the value itself (BoTorch's path gives the same
under ``gpytorch.settings.detach_test_caches(False)``).

**Stationary kernels only.** K(U_f, U_f) is taken as K(W, W) at a common x', which holds for the
stationary kernels of this project's GP profiles (RBF and Matern in a ``ScaleKernel``); another
kernel is refused with a one-line ``TypeError``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.acquisition.acquisition import OneShotAcquisitionFunction
from botorch.models import SingleTaskGP
from botorch.optim.initializers import gen_batch_initial_conditions
from botorch.posteriors import GPyTorchPosterior
from botorch.sampling import MCSampler
from botorch.utils.sampling import boltzmann_sample
from botorch.utils.transforms import t_batch_mode_transform
from gpytorch.kernels import MaternKernel, RBFKernel, ScaleKernel
from linear_operator.utils.cholesky import psd_safe_cholesky
from torch import Tensor

from problems.measures import RiskMeasure

#: The gradient of the one-shot KG: exact, or as BoTorch 0.18.1 / GPyTorch 1.15.2 release it.
GRADIENTS = ("exact", "released")
#: The two ways to compute the one-shot KG: BoTorch's fantasy models, or this module.
ENGINES = ("botorch", "fused")
#: How the one-shot KGs may depart from BoTorch's computation, by option (their deviations:
#: :attr:`algorithms.base.Algorithm.deviations`; the module docstring has the details).
ONE_SHOT_DEVIATIONS = (
    "`engine=\"fused\"` (default `botorch`) computes the same one-shot KG in closed form, a fantasy as a "
    "rank-one update without fantasy models: values and gradients BoTorch's to rounding, several times "
    "faster.",
    "`gradient=\"exact\"` (default `released`, BoTorch's) optimizes with the value's own gradient: BoTorch "
    "0.18.1 with GPyTorch 1.15.2 detaches the fantasy model's covariance cache, so the gradient in the query "
    "misses part of the value's.",
)


class PosteriorFactors:
    """What the current GP's posterior needs, computed once per iteration: the training inputs
    ``X`` (``n x d``), the inverse Cholesky factor of K(X, X) + sigma^2 I (``n x n``), the weights
    alpha = K_n^{-1} (y - c) (``n``) in the model's standardized units, the noise, the constant mean
    and the outcome transform's offset and scale.

    Args:
        model: a fitted ``SingleTaskGP`` with a ``ScaleKernel`` over an RBF or Matern kernel, a
            constant mean, a homoskedastic Gaussian likelihood and optionally ``Standardize``.
    """

    def __init__(self, model: SingleTaskGP) -> None:
        kernel = model.covar_module
        if not (isinstance(kernel, ScaleKernel) and isinstance(kernel.base_kernel, RBFKernel | MaternKernel)):
            raise TypeError(f"the fused one-shot KG needs a stationary ScaleKernel(RBF or Matern), got "
                            f"{type(kernel).__name__}")
        self.kernel = kernel
        self.X = model.train_inputs[0].detach()
        n = self.X.shape[0]
        self.noise = model.likelihood.noise.detach().reshape(())
        self.constant = model.mean_module.constant.detach().reshape(())
        train = self.cov(self.X, self.X) + self.noise * torch.eye(n, dtype=self.X.dtype)
        factor = psd_safe_cholesky(train)
        self.inverse_factor = torch.linalg.solve_triangular(factor, torch.eye(n, dtype=self.X.dtype),
                                                            upper=False)  # L^{-1}
        offset = (model.train_targets.detach() - self.constant).unsqueeze(-1)
        self.alpha = torch.cholesky_solve(offset, factor).squeeze(-1)
        transform = getattr(model, "outcome_transform", None)
        if transform is None:
            self.shift, self.scale = torch.zeros((), dtype=self.X.dtype), torch.ones((), dtype=self.X.dtype)
        else:
            self.shift, self.scale = transform.means.reshape(()), transform.stdvs.reshape(())

    def cov(self, A: Tensor, B: Tensor) -> Tensor:
        """The prior covariance K(A, B): ``... x p x d``, ``... x r x d`` -> ``... x p x r``."""
        return self.kernel.forward(A, B)


@dataclass(frozen=True)
class SampleMeasure:
    """A risk measure of each posterior sample's m values, with their masses and level, as the sum
    of the measure's weights times the values (:meth:`problems.measures.RiskMeasure.weights`): the
    value of the sorting measures of :mod:`problems.risk`, and of BoTorch's ``VaR`` and ``CVaR`` on
    values repeated by counts (masses counts / N, alpha = k / N for the k-th smallest of N), without
    a sort of the samples. The gradient in the values is the weights (almost everywhere).

    Attributes:
        measure: the risk measure (VaR, CVaR or the mean).
        masses: ``m`` masses summing to one.
        alpha: the lower-tail level (unused by the mean).
    """

    measure: RiskMeasure
    masses: Tensor
    alpha: float

    def weights(self, values: Tensor) -> Tensor:
        """The measure's weights at ``values`` (``... x m``, no gradient)."""
        values = values.detach()
        return self.measure.weights(values, self.masses.to(values), self.alpha)

    def __call__(self, values: Tensor) -> Tensor:
        """``... x m`` -> ``...``, differentiable in ``values``."""
        return (self.weights(values) * values).sum(dim=-1)


class _JointPosterior:
    """Shared by the value function and the KG: the current posterior at the points U = (x, W), and
    the risk measure of its samples (:class:`_SampleRisk`)."""

    def __init__(self, factors: PosteriorFactors, w: Tensor, d_x: int, measure: SampleMeasure,
                 zeta: Tensor) -> None:
        self.factors, self.w, self.d_x, self.measure, self.zeta = factors, w, d_x, measure, zeta
        self.m = w.shape[0]
        anchor = torch.cat([torch.zeros(self.m, d_x, dtype=w.dtype), w], dim=-1)
        # K(U, U) in the outcome's units: the same for every x (a stationary kernel)
        self.prior = factors.cov(anchor, anchor) * (factors.scale * factors.scale)

    def points(self, x: Tensor) -> Tensor:
        """``... x d_x`` -> ``... x m x d``: each x with every w of the set, in the set's order."""
        shape = (*x.shape[:-1], self.m)
        return torch.cat([x.unsqueeze(-2).expand(*shape, self.d_x), self.w.expand(*shape, self.w.shape[-1])],
                         dim=-1)

    def whiten(self, U: Tensor) -> tuple[Tensor, Tensor]:
        """K(U, X) and V^T = K(U, X) L^{-T}, both ``... x p x n``, for points ``... x p x d``."""
        f = self.factors
        cross = f.cov(U.reshape(-1, U.shape[-1]), f.X)
        return (cross.reshape(*U.shape[:-1], -1),
                (cross @ f.inverse_factor.T).reshape(*U.shape[:-1], -1))

    def risk(self, mean: Tensor, root: Tensor) -> Tensor:
        """The risk measure of each sample mean + chol(prior - root root^T) zeta, in the outcome's
        units: ``B x m`` standardized means, ``B x m x r`` -> ``B x S``."""
        f = self.factors
        return _SampleRisk.apply(f.shift + f.scale * mean, root, self.prior, self.zeta, self.measure)


@functools.cache
def _upper_mask(m: int) -> Tensor:
    """``m x m``: True on and above the diagonal."""
    return torch.ones(m, m, dtype=torch.bool).triu()


class _SampleRisk(torch.autograd.Function):
    """values[b, s] = rho(mean_b + chol(prior - H_b H_b^T) zeta_s): ``B x m``, ``B x m x r`` ->
    ``B x S`` (rho a :class:`SampleMeasure`), with a backward that never forms the gradient of the
    covariance.

    Autograd's would: the Cholesky adjoint Gamma = L^{-T} Phi(L^T Lbar) L^{-1} (m x m; Phi takes the
    lower triangle and halves its diagonal), then -(Gamma + Gamma^T) H. The same vector is
    -L^{-T} Psi (L^{-1} H) with Psi = Phi(M) + Phi(M)^T and M = L^T Lbar = (L^T G^T) zeta, G the
    gradient at the samples: two triangular solves with r right-hand sides instead of two with m,
    and no dense product with L.
    """

    @staticmethod
    def forward(ctx, mean: Tensor, root: Tensor, prior: Tensor, zeta: Tensor,
                measure: SampleMeasure) -> Tensor:
        B = mean.shape[0]
        cov = torch.baddbmm(prior, root, root.transpose(-1, -2), alpha=-1)
        factor = psd_safe_cholesky(cov)
        samples = torch.baddbmm(mean.unsqueeze(-2), zeta.expand(B, *zeta.shape), factor.transpose(-1, -2))
        weights = measure.weights(samples)
        ctx.save_for_backward(factor, root, weights, zeta)
        return (weights * samples).sum(dim=-1)

    @staticmethod
    def backward(ctx, upstream: Tensor) -> tuple[Tensor | None, ...]:
        factor, root, weights, zeta = ctx.saved_tensors
        grad = upstream.unsqueeze(-1) * weights  # B x S x m, at the samples
        grad_mean = grad.sum(dim=-2)
        if not ctx.needs_input_grad[1]:
            return grad_mean, None, None, None, None
        m, S = zeta.shape[-1], zeta.shape[0]
        if m > S:  # L^T Lbar = (L^T G^T) zeta = L^T (G^T zeta): the cheaper order, B x m x m
            M = (factor.transpose(-1, -2) @ grad.transpose(-1, -2)) @ zeta
        else:
            M = factor.transpose(-1, -2) @ (grad.transpose(-1, -2) @ zeta)
        diagonal = M.diagonal(dim1=-2, dim2=-1).clone()
        low = M.masked_fill_(_upper_mask(m), 0.0)  # tril(M, -1), in place (tril itself is slow here)
        psi = low + low.transpose(-1, -2)
        psi.diagonal(dim1=-2, dim2=-1).copy_(diagonal)
        whitened = torch.linalg.solve_triangular(factor, root, upper=False)
        grad_root = -torch.linalg.solve_triangular(factor.transpose(-1, -2), psi @ whitened, upper=True)
        return grad_mean, grad_root, None, None, None


class FusedValueFunction(AcquisitionFunction):
    """The inner value function of the one-shot KG on the current GP (what BoTorch's
    ``gen_one_shot_kg_initial_conditions`` maximizes): the mean over the inner samples of the risk
    measure of the posterior at (x, W), x the first ``d_x`` coordinates of the input.

    ``b x 1 x d`` -> ``b``.
    """

    def __init__(self, joint: _JointPosterior, model: SingleTaskGP) -> None:
        super().__init__(model)
        self.joint = joint

    @t_batch_mode_transform(expected_q=1)
    def forward(self, X: Tensor) -> Tensor:
        joint, f = self.joint, self.joint.factors
        cross, whitened = joint.whiten(joint.points(X[..., 0, : joint.d_x]))  # b x m x n
        mean = f.constant + cross @ f.alpha
        return joint.risk(mean, whitened * f.scale).mean(dim=-1)


class FusedOneShotKG(OneShotAcquisitionFunction):
    """The one-shot risk-averse KG of the module docstring: ``b x (1 + F) x d`` -> ``b``, the same
    function of its input as BoTorch's ``qMultiFidelityKnowledgeGradient`` with ``project`` dropping
    w, ``AppendFeatures(W)`` on the model and the risk measure that ``measure`` equals as objective.

    Args:
        model: the current GP (:class:`PosteriorFactors` says which).
        w: the w set, ``m x d_z``.
        measure: the risk measure over each x's m values.
        sampler: the fantasy sampler (its F base samples are drawn once).
        inner_sampler: the inner sampler (its S x m base samples are drawn once).
        d_x: the number of x coordinates; a point is (x, z).
        gradient: ``"exact"`` or ``"released"`` (module docstring).
    """

    def __init__(self, model: SingleTaskGP, w: Tensor, measure: SampleMeasure, sampler: MCSampler,
                 inner_sampler: MCSampler, d_x: int, gradient: str = "released") -> None:
        super().__init__(model)
        if gradient not in GRADIENTS:
            raise ValueError(f"gradient must be one of {', '.join(GRADIENTS)}, got {gradient!r}")
        self.gradient, self.d_x = gradient, d_x
        self.sampler, self.inner_sampler = sampler, inner_sampler
        self.num_fantasies = sampler.sample_shape.numel()
        X = model.train_inputs[0]
        w = w.to(X)
        self.eps = base_samples(sampler, model, X[:1], observation_noise=True).reshape(-1)
        points = torch.cat([X[:1, :d_x].expand(w.shape[0], d_x), w], dim=-1)
        zeta = base_samples(inner_sampler, model, points).reshape(-1, w.shape[0])
        self.joint = _JointPosterior(PosteriorFactors(model), w, d_x, measure, zeta)

    def get_augmented_q_batch_size(self, q: int) -> int:
        """q candidates and the fantasy solutions."""
        return q + self.num_fantasies

    def extract_candidates(self, X_full: Tensor) -> Tensor:
        """The candidates of a full one-shot point: ``b x (q + F) x d`` -> ``b x q x d``."""
        return X_full[..., : -self.num_fantasies, :]

    def value_function(self) -> FusedValueFunction:
        """The inner value function on the current GP (for the one-shot starts)."""
        return FusedValueFunction(self.joint, self.model)

    @t_batch_mode_transform()
    def forward(self, X: Tensor) -> Tensor:
        joint, f = self.joint, self.joint.factors
        b, F, m = X.shape[0], self.num_fantasies, joint.m
        n, x_a = f.X.shape[0], X[:, :1, :]
        U = joint.points(X[:, 1:, : self.d_x]).reshape(b, F * m, -1)
        # one kernel call for K(U_f, X), K(U_f, x_a), K(x_a, X) and k(x_a, x_a): b x (F m + 1) x (n + 1)
        both = f.cov(torch.cat([U, x_a], dim=1), torch.cat([f.X.expand(b, n, -1), x_a], dim=1))
        cross = both[:, :, :n]
        white = cross @ f.inverse_factor.T
        cross, whitened, v_a = cross[:, :-1].view(b, F, m, n), white[:, :-1].view(b, F, m, n), white[:, -1]
        to_a, k_aa = both[:, :-1, n].view(b, F, m), both[:, -1, n]
        s_a = k_aa + f.noise - (v_a * v_a).sum(dim=-1)
        c = to_a - (whitened @ v_a.view(b, 1, -1, 1)).squeeze(-1)
        if self.gradient == "released":  # v_a and s_a constant inside the covariance (module docstring)
            c_cov = to_a - (whitened @ v_a.detach().view(b, 1, -1, 1)).squeeze(-1)
            s_cov = s_a.detach()
        else:
            c_cov, s_cov = c, s_a
        mean = f.constant + cross @ f.alpha + c * (self.eps.view(1, F, 1) / s_a.sqrt().view(b, 1, 1))
        root = torch.cat([whitened, (c_cov / s_cov.sqrt().view(b, 1, 1)).unsqueeze(-1)], dim=-1) * f.scale
        values = joint.risk(mean.reshape(b * F, m), root.reshape(b * F, m, -1))  # (b F) x S
        return values.view(b, F, -1).mean(dim=-1).mean(dim=-1)


def base_samples(sampler: MCSampler, model: SingleTaskGP, X: Tensor,
                 observation_noise: bool = False) -> Tensor:
    """The sampler's base samples for a posterior of ``X``'s shape (``q x d``), drawn by the sampler
    itself (so they are the ones BoTorch's path uses: base samples do not depend on batch shape)."""
    posterior = model.posterior(X.detach().unsqueeze(0), observation_noise=observation_noise)
    if not isinstance(posterior, GPyTorchPosterior):
        raise TypeError(f"expected a GPyTorchPosterior, got {type(posterior).__name__}")
    sampler._construct_base_samples(posterior)
    return sampler.base_samples.detach().clone()


def fused_initial_conditions(acq_function: FusedOneShotKG, bounds: Tensor, q: int, num_restarts: int,
                             raw_samples: int, fixed_features: Mapping[int, float] | None = None,
                             options: Mapping[str, object] | None = None, **kwargs: object) -> Tensor:
    """BoTorch's ``gen_one_shot_kg_initial_conditions`` with the fused value function: the same
    draws in the same order (raw samples scored by the KG, the value function maximized from its own
    starts, the fantasy solutions drawn from its maximizers by a Boltzmann rule), so the same starts.

    Returns:
        ``num_restarts x (q + F) x d`` starts.
    """
    from botorch.optim.optimize import optimize_acqf  # as BoTorch's initializer imports it

    options = dict(options or {})
    frac_random = float(options.get("frac_random", 0.1))
    q_aug = acq_function.get_augmented_q_batch_size(q=q)
    ics = gen_batch_initial_conditions(acq_function=acq_function, bounds=bounds, q=q_aug,
                                       num_restarts=num_restarts, raw_samples=raw_samples,
                                       fixed_features=fixed_features, options=options, **kwargs)
    candidates, values = optimize_acqf(acq_function=acq_function.value_function(), bounds=bounds, q=1,
                                       num_restarts=options.get("num_inner_restarts", 20),
                                       raw_samples=options.get("raw_inner_samples", 1024),
                                       fixed_features=fixed_features, return_best_only=False, **kwargs)
    n_value = int((1 - frac_random) * (q_aug - q))
    index = boltzmann_sample(function_values=values, num_samples=num_restarts * n_value,
                             eta=options.get("eta", 2.0), replacement=True)
    ics[..., -n_value:, :] = candidates[index, 0].view(num_restarts, n_value, -1)
    return ics
