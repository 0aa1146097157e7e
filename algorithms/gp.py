"""The GP model of the project: profiles, their fit and the confidence bounds.

Every algorithm gets its model from here, so methods differ only in how they use it. Which model is
a setting of the cell (``CellSpec.gp``, ``--gp NAME``), one of :data:`GP_PROFILES`:

* ``paper`` (the default): the paper's model. BoTorch ``SingleTaskGP`` on [0, 1]-scaled
  concat([x, z]); ``ScaleKernel(RBFKernel(ARD))``, the paper's squared-exponential kernel with a
  signal variance; a constant mean (BoTorch's default, as in the authors' code and BoRisk), on
  outcomes standardized by ``Standardize``; Gaussian likelihood with noise variance >= 1e-4 (on the
  standardized scale); no hyperparameter priors: the fit is plain maximum likelihood, as in the
  paper, every 3 iterations. Box constraints (:data:`LENGTHSCALE_BOUNDS`, :data:`OUTPUTSCALE_BOUNDS`)
  keep it away from the degenerate optima a likelihood has with three points. The lower lengthscale
  bound, 0.05 on the unit cube, also keeps the kernel from underflowing to exact zeros between points
  of the cube (that needs a scaled distance above 38), which would make the bounds of far-apart z
  exactly equal and their ties arbitrary.
* ``borisk``: BoRisk's model (``BoRisk/experiment.py``, ``fit_gp``, on BoTorch 0.3's ``SingleTaskGP``
  defaults): ``ScaleKernel(MaternKernel(nu=2.5, ARD))`` with Gamma priors on the lengthscales
  (concentration 3, rate 6), the outputscale (2, 0.15) and the noise (1.1, 0.5), noise >= 1e-4,
  standardized outcomes, a fresh model fit by maximum a posteriori at every iteration from GPyTorch's
  initial values (lengthscales and outputscale softplus(0) = ln 2, noise at its prior's mode 0.2).
* ``authors``: the model of the authors' V-UCB code (``qphong/BayesOpt-LV``, ``functions.py``,
  ``fit_gp``, GPflow 1): Matern-5/2 ARD, a trainable constant mean, no output standardization, a
  Gamma prior of shape 1.1 and *scale* 0.5 (rate 2) on the noise variance, which is kept in
  [1e-4, 4]; no prior on the kernel; a fresh model every 3 iterations from GPflow's initial values
  (lengthscales 1, signal variance 1, mean 0, noise at its prior's mode 0.05). Their code copied
  BoRisk's noise prior but read GPyTorch's rate as GPflow's scale, so the two priors differ (modes
  0.2 and 0.05); each profile keeps its source's.

A profile fixes the kernel, priors, constraints, initial values, whether outcomes are
standardized, how often the hyperparameters are refit (``fit_every``) and whether a fit also starts
from the previous hyperparameters (``warm_start``). The posterior code here handles every profile;
the squared-exponential kernel gets a faster path (:meth:`PosteriorMarginals.grid`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms.outcome import Standardize
from gpytorch.constraints import GreaterThan, Interval
from gpytorch.kernels import MaternKernel, RBFKernel, ScaleKernel
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.mlls import ExactMarginalLogLikelihood
from gpytorch.priors import GammaPrior
from linear_operator.utils.cholesky import psd_safe_cholesky
from torch import Tensor

from problems.float64 import default_float64

MIN_NOISE = 1e-4
LENGTHSCALE_BOUNDS = (5e-2, 1e1)
OUTPUTSCALE_BOUNDS = (1e-2, 1e2)
#: Hyperparameters a fit of the ``paper`` profile starts from (also the reset on a failed fit).
INITIAL_HYPERS = {"lengthscale": 0.3, "outputscale": 1.0, "noise": 1e-2}


@dataclass(frozen=True)
class GPProfile:
    """One kind of GP model and how it is fit (see the module docstring for the three profiles).

    Attributes:
        name: the profile's name (``CellSpec.gp``).
        kernel: ``"rbf"`` (squared exponential) or ``"matern52"``, ARD, inside a ``ScaleKernel``.
        standardize: standardize the outcomes (BoTorch ``Standardize``) or model them as they are.
        fit_every: refit the hyperparameters at iterations 0, k, 2k, ...; in between the model is
            rebuilt on the new data with the hyperparameters kept.
        warm_start: a refit also starts from the previous hyperparameters (the higher likelihood
            wins); otherwise every fit starts afresh from ``initial``, as a new model would.
        lengthscale_bounds, outputscale_bounds: box constraints, or None for positivity only.
        noise_bounds: (lower, upper or None) on the noise variance.
        lengthscale_prior, outputscale_prior, noise_prior: Gamma (concentration, rate), or None.
        initial: initial hyperparameters (``lengthscale``, ``outputscale``, ``noise``, ``mean``);
            a missing key keeps GPyTorch's initial value.
        source: where the profile's facts come from, for the docs.
    """

    name: str
    kernel: str
    standardize: bool
    fit_every: int
    warm_start: bool
    lengthscale_bounds: tuple[float, float] | None = None
    outputscale_bounds: tuple[float, float] | None = None
    noise_bounds: tuple[float, float | None] = (MIN_NOISE, None)
    lengthscale_prior: tuple[float, float] | None = None
    outputscale_prior: tuple[float, float] | None = None
    noise_prior: tuple[float, float] | None = None
    initial: dict[str, float] = field(default_factory=dict)
    source: str = ""


PAPER = GPProfile(
    "paper", kernel="rbf", standardize=True, fit_every=3, warm_start=True,
    lengthscale_bounds=LENGTHSCALE_BOUNDS, outputscale_bounds=OUTPUTSCALE_BOUNDS,
    initial=INITIAL_HYPERS,
    source="the paper, Section 5: squared-exponential kernel, maximum likelihood")
BORISK = GPProfile(
    "borisk", kernel="matern52", standardize=True, fit_every=1, warm_start=False,
    lengthscale_prior=(3.0, 6.0), outputscale_prior=(2.0, 0.15), noise_prior=(1.1, 0.5),
    # GPyTorch's initial raw value 0 is softplus(0) = ln 2; BoRisk starts the noise at its prior's mode
    initial={"lengthscale": math.log(2.0), "outputscale": math.log(2.0), "noise": 0.2},
    source="saitcakmak/BoRisk, BoRisk/experiment.py fit_gp, on BoTorch 0.3's SingleTaskGP defaults")
AUTHORS = GPProfile(
    "authors", kernel="matern52", standardize=False, fit_every=3, warm_start=False,
    noise_bounds=(MIN_NOISE, 4.0), noise_prior=(1.1, 2.0),
    initial={"lengthscale": 1.0, "outputscale": 1.0, "noise": 0.05, "mean": 0.0},
    source="qphong/BayesOpt-LV, functions.py fit_gp (GPflow 1 GPR), run_var_UCB_discrete.py")
#: The GP profiles by name; ``paper`` is the default of every cell.
GP_PROFILES: dict[str, GPProfile] = {p.name: p for p in (PAPER, BORISK, AUTHORS)}
DEFAULT_GP = "paper"
#: How a method's model differs from its source's, whatever the method: the start of the sentence a
#: method declares among its deviations (:attr:`algorithms.base.Algorithm.deviations`), which then
#: says what its source's model is and which profile gives it.
CELL_GP = ("The GP is the cell's, shared by every method (`--gp`, default `paper`: SE-ARD kernel, constant "
           "mean, standardized outcomes, maximum likelihood every 3 iterations)")


def gp_profile(name: str | GPProfile) -> GPProfile:
    """The profile called ``name`` (a profile is returned as it is); ``ValueError`` if unknown."""
    if isinstance(name, GPProfile):
        return name
    if name not in GP_PROFILES:
        raise ValueError(f"unknown GP profile {name!r}; valid: {', '.join(GP_PROFILES)}")
    return GP_PROFILES[name]


def make_gp(train_X: Tensor, train_Y: Tensor, profile: str | GPProfile = PAPER) -> SingleTaskGP:
    """A fresh model of ``profile`` on ``n x d`` float64 inputs and ``n x 1`` outcomes, at the
    profile's initial hyperparameters.

    Built with float64 as torch's default dtype: GPyTorch creates constraint bounds and parameters
    at the default dtype, and a later ``.to(float64)`` keeps their float32 rounding, so the fit (and
    every row after it) would otherwise depend on the caller's default dtype.
    """
    if train_X.dtype != torch.float64:
        raise TypeError(f"the GP works in float64, got {train_X.dtype}")
    with default_float64():
        return _make_gp(train_X, train_Y, gp_profile(profile))


def _interval(bounds: tuple[float, float | None] | None) -> GreaterThan | Interval | None:
    if bounds is None:
        return None
    lower, upper = bounds
    return GreaterThan(lower) if upper is None else Interval(lower, upper)


def _gamma(parameters: tuple[float, float] | None) -> GammaPrior | None:
    return None if parameters is None else GammaPrior(*parameters)


def _make_gp(train_X: Tensor, train_Y: Tensor, profile: GPProfile) -> SingleTaskGP:
    d = train_X.shape[-1]
    base_options: dict = {"ard_num_dims": d}
    if profile.lengthscale_bounds is not None:
        base_options["lengthscale_constraint"] = _interval(profile.lengthscale_bounds)
    if profile.lengthscale_prior is not None:
        base_options["lengthscale_prior"] = _gamma(profile.lengthscale_prior)
    base = (RBFKernel(**base_options) if profile.kernel == "rbf"
            else MaternKernel(nu=2.5, **base_options))
    scale_options: dict = {}
    if profile.outputscale_bounds is not None:
        scale_options["outputscale_constraint"] = _interval(profile.outputscale_bounds)
    if profile.outputscale_prior is not None:
        scale_options["outputscale_prior"] = _gamma(profile.outputscale_prior)
    kernel = ScaleKernel(base, **scale_options)
    likelihood_options: dict = {"noise_constraint": _interval(profile.noise_bounds)}
    if profile.noise_prior is not None:
        likelihood_options["noise_prior"] = _gamma(profile.noise_prior)
    likelihood = GaussianLikelihood(**likelihood_options)
    model = SingleTaskGP(
        train_X,
        train_Y,
        covar_module=kernel,
        likelihood=likelihood,
        outcome_transform=Standardize(m=1) if profile.standardize else None,
    )
    set_hypers(model, profile.initial)
    return model.to(train_X)


def set_hypers(model: SingleTaskGP, hypers: dict[str, Tensor | float]) -> None:
    """Set those of lengthscale, outputscale, noise and the constant mean that ``hypers`` holds."""
    if "lengthscale" in hypers:
        model.covar_module.base_kernel.lengthscale = hypers["lengthscale"]
    if "outputscale" in hypers:
        model.covar_module.outputscale = hypers["outputscale"]
    if "noise" in hypers:
        model.likelihood.noise = hypers["noise"]
    if "mean" in hypers:
        model.mean_module.constant.data.fill_(float(hypers["mean"]))


_HYPER_PREFIXES = ("covar_module.", "likelihood.", "mean_module.")


def get_hypers(model: SingleTaskGP) -> dict[str, Tensor]:
    """The model's hyperparameters as raw (unconstrained) parameters, detached copies.

    Raw values copy exactly; constrained values would pass through the constraint's inverse and
    come back a few ulps off.
    """
    return {k: v.detach().clone() for k, v in model.state_dict().items()
            if k.startswith(_HYPER_PREFIXES)}


def copy_hypers(source: SingleTaskGP, target: SingleTaskGP) -> None:
    """Give ``target`` exactly the hyperparameters of ``source``."""
    target.load_state_dict(get_hypers(source), strict=False)


@dataclass(frozen=True)
class FitReport:
    """What happened in one model update.

    Attributes:
        refit: True for a maximum-likelihood fit, False for conditioning with kept hyperparameters.
        ok: False if every fit attempt failed (the previous hyperparameters are then kept).
        attempts: number of fit attempts (0 when conditioning).
        message: the last failure or warning, '' if none.
    """

    refit: bool
    ok: bool = True
    attempts: int = 0
    message: str = ""


def _fit_from(model: SingleTaskGP) -> tuple[float, str]:
    """One maximum-likelihood fit of ``model`` from its current hyperparameters.

    Returns the final marginal log likelihood (per point, as GPyTorch reports it) and the last
    optimizer warning ('' if none). Raises whatever the fit raises.
    """
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # One attempt per call: the caller decides how to restart, deterministically.
        fit_gpytorch_mll(mll, max_attempts=1)
    bad = [w for w in caught if type(w.message).__name__ in ("OptimizationWarning",
                                                              "NumericalWarning")]
    mll.train()
    with torch.no_grad():
        value = float(mll(model(*model.train_inputs), model.train_targets))
    model.eval()
    return value, str(bad[-1].message).splitlines()[0] if bad else ""


def fit_gp(
    train_X: Tensor,
    train_Y: Tensor,
    previous: SingleTaskGP | None,
    refit: bool,
    generator: torch.Generator,
    profile: str | GPProfile = PAPER,
) -> tuple[SingleTaskGP, FitReport]:
    """The model of ``profile`` for the data ``train_X`` (``n x d``), ``train_Y`` (``n x 1``).

    Without ``refit`` (and with a previous model) the model is rebuilt on the new data with the
    previous hyperparameters, only the standardization recomputed.

    With ``refit`` the hyperparameters are fit by maximum likelihood (maximum a posteriori where the
    profile has priors) from the profile's initial values and, for a ``warm_start`` profile (the
    default ``paper``), also from the previous hyperparameters, keeping the higher objective. The
    second start matters: a fit on three to six points often ends at an interpolating optimum (noise
    at its bound, short lengthscales), and a fit warm-started there alone stays there long after the
    data would support the smooth one. A start that raises is retried once from the initial values
    with a lengthscale jitter drawn from ``generator``; if nothing succeeds, the previous
    hyperparameters are kept and the failure is reported, never hidden.

    The returned model is frozen (``requires_grad`` off): acquisition gradients then flow to the
    query points only, not back into the hyperparameters.
    """
    profile = gp_profile(profile)
    if not refit and previous is not None:
        model = make_gp(train_X, train_Y, profile)
        copy_hypers(previous, model)
        model.eval()
        return model.requires_grad_(False), FitReport(refit=False)
    starts: list[SingleTaskGP | None] = [None]
    if previous is not None and profile.warm_start:
        starts = [previous, None]
    best: tuple[float, SingleTaskGP] | None = None
    messages, attempts, failures = [], 0, 0
    for start in starts:
        for retry in range(2):
            model = make_gp(train_X, train_Y, profile)
            if start is not None and retry == 0:
                copy_hypers(start, model)
            elif retry == 1:
                jitter = torch.exp(0.5 * torch.randn(train_X.shape[-1], generator=generator,
                                                     dtype=train_X.dtype))
                lengthscale = profile.initial.get("lengthscale", math.log(2.0))
                set_hypers(model, {**profile.initial, "lengthscale": lengthscale * jitter})
            attempts += 1
            try:
                value, message = _fit_from(model)
            except Exception as error:  # any failure of the fit is retried and reported
                failures += 1
                messages.append(f"{type(error).__name__}: {str(error).splitlines()[0]}"
                                if str(error) else type(error).__name__)
                continue
            if message:
                messages.append(message)
            if math.isfinite(value) and (best is None or value > best[0]):
                best = (value, model)
            break
    if best is None:
        model = make_gp(train_X, train_Y, profile)
        if previous is not None:
            copy_hypers(previous, model)
        model.eval()
        return model.requires_grad_(False), FitReport(refit=True, ok=False, attempts=attempts,
                                                      message=messages[-1])
    return best[1].requires_grad_(False), FitReport(refit=True, ok=True, attempts=attempts,
                              message=messages[-1] if messages else "")


def hyperparameters(model: SingleTaskGP) -> dict[str, object]:
    """The fitted hyperparameters as they are stored per iteration (the ``gp_*`` columns):
    ``gp_lengthscale`` (list, one per input: x then z), ``gp_outputscale``, ``gp_noise`` and
    ``gp_mean``, on the scale the model works in (standardized outcomes where the profile
    standardizes), so that a fit run to a bound shows the bound."""
    return {
        "gp_lengthscale": model.covar_module.base_kernel.lengthscale.detach().reshape(-1).tolist(),
        "gp_outputscale": float(model.covar_module.outputscale.detach()),
        "gp_noise": float(model.likelihood.noise.detach().reshape(())),
        "gp_mean": float(model.mean_module.constant.detach().reshape(())),
    }


def beta_paper(t: int) -> float:
    """beta_t = 2 log(t^2 pi^2 / 0.6), the paper's schedule (t >= 1)."""
    return 2.0 * math.log(t**2 * math.pi**2 / 0.6)


class PosteriorMarginals:
    """Posterior mean and latent standard deviation of f from a fitted ``SingleTaskGP``, fast.

    BoTorch's ``model.posterior`` costs about 10 us per point when asked for marginals of many
    independent points (it builds a batch of one-point posteriors); V-UCB asks for 10^5 of them per
    iteration. This computes the same numbers from the model's own kernel, mean, noise and outcome
    transform, with one Cholesky factor of the training covariance reused for every call: about
    0.3 us per point. ``tests/algorithms/test_gp.py`` checks it against ``model.posterior``.

    Example:
        >>> marginals = PosteriorMarginals(model)
        >>> mean, std = marginals(X)  # X: batch_shape x d -> two batch_shape tensors
    """

    def __init__(self, model: SingleTaskGP) -> None:
        train_X = model.train_inputs[0]
        if train_X.ndim != 2:
            raise ValueError("PosteriorMarginals supports a single (non-batched) model")
        self.kernel = model.covar_module
        self.train_X = train_X
        self.constant = model.mean_module.constant.detach()
        with torch.no_grad():
            K = self.kernel.forward(train_X, train_X)
            K = K + model.likelihood.noise.detach() * torch.eye(K.shape[-1], dtype=K.dtype)
            self.L = psd_safe_cholesky(K)
            residual = (model.train_targets - self.constant).unsqueeze(-1)
            self.weights = torch.cholesky_solve(residual, self.L).squeeze(-1)
            eye = torch.eye(K.shape[-1], dtype=K.dtype)
            # L^-1 once, so that every later variance is one GEMM instead of a triangular solve.
            self.L_inv = torch.linalg.solve_triangular(self.L, eye, upper=False)
        transform = getattr(model, "outcome_transform", None)
        if transform is None:  # a profile that models the outcomes as they are
            self.y_mean = torch.zeros((), dtype=train_X.dtype)
            self.y_std = torch.ones((), dtype=train_X.dtype)
        else:
            self.y_mean = transform.means.detach().reshape(())
            self.y_std = transform.stdvs.detach().reshape(())

    def __call__(self, X: Tensor) -> tuple[Tensor, Tensor]:
        """Mean and latent std at ``batch_shape x d`` points: two ``batch_shape`` tensors."""
        batch_shape = X.shape[:-1]
        flat = X.reshape(-1, X.shape[-1])
        cross = self.kernel.forward(flat, self.train_X)  # N x n
        mean = self.constant + cross @ self.weights  # the same expression as mean()'s: the same bits
        v = torch.linalg.solve_triangular(self.L, cross.transpose(-1, -2), upper=False)  # n x N
        prior_var = self.kernel.forward(flat, flat, diag=True)
        var = (prior_var - (v * v).sum(dim=0)).clamp_min(0.0)
        mean = mean * self.y_std + self.y_mean
        std = var.sqrt() * self.y_std
        return mean.reshape(batch_shape), std.reshape(batch_shape)

    def grid(self, X: Tensor, Z: Tensor) -> tuple[Tensor, Tensor]:
        """Mean and latent std at every (x, z) pair: ``batch_shape x d_x`` and ``m x d_z`` inputs give
        two ``batch_shape x m`` tensors.

        With the squared-exponential ARD kernel, which factorizes over coordinates,
        k((x, z), (x', z')) = s k_x(x, x') k_z(z, z'), the cross-covariance of the whole x-by-Z grid
        is an outer product of two small kernel matrices: no exponential per grid point, and the
        posterior mean is one matrix product. Any other kernel (the Matern profiles, or a kernel without
        an output scale, as BoTorch's default ``SingleTaskGP``) evaluates the kernel on every (x, z)
        pair. Differentiable in ``X``.
        """
        factors = self._rbf_factors(X, Z)
        if factors is None:
            return self(_pairs(X, Z))
        k_x, k_z, outputscale = factors
        mean = self._factor_mean(k_x, k_z, outputscale)
        cross = outputscale * k_x.unsqueeze(-2) * k_z  # batch x m x n
        v = cross @ self.L_inv.transpose(-1, -2)
        var = (outputscale - (v * v).sum(dim=-1)).clamp_min(0.0)
        return mean * self.y_std + self.y_mean, var.sqrt() * self.y_std

    def mean(self, X: Tensor) -> Tensor:
        """The posterior mean alone at ``batch_shape x d`` points -> ``batch_shape``: bit for bit the
        first tensor of :meth:`__call__` (the same expression), without the variance's cost."""
        flat = X.reshape(-1, X.shape[-1])
        mean = self.constant + self.kernel.forward(flat, self.train_X) @ self.weights
        return (mean * self.y_std + self.y_mean).reshape(X.shape[:-1])

    def grid_mean(self, X: Tensor, Z: Tensor) -> Tensor:
        """The posterior mean alone on the x-by-Z grid, ``batch_shape x m``: bit for bit the first
        tensor of :meth:`grid`, without the variance, which costs n times more (a ``batch x m x n``
        product with L^-1). The shared recommendation rule needs only the mean."""
        factors = self._rbf_factors(X, Z)
        if factors is None:
            return self.mean(_pairs(X, Z))
        return self._factor_mean(*factors) * self.y_std + self.y_mean

    def _factor_mean(self, k_x: Tensor, k_z: Tensor, outputscale: Tensor) -> Tensor:
        """The grid's mean on the model's (standardized) scale from :meth:`_rbf_factors`: one
        expression for :meth:`grid` and :meth:`grid_mean`, so the two give the same bits."""
        return self.constant + outputscale * (k_x * self.weights) @ k_z.transpose(-1, -2)

    def _rbf_factors(self, X: Tensor, Z: Tensor) -> tuple[Tensor, Tensor, Tensor] | None:
        """With a ``ScaleKernel(RBFKernel)``, k_x (``batch_shape x n``), k_z (``m x n``) and the output
        scale, whose products give the grid's cross-covariance; None for any other kernel."""
        base = getattr(self.kernel, "base_kernel", None)  # ScaleKernel(RBFKernel): the fast path
        if not isinstance(base, RBFKernel):
            return None
        d_x = X.shape[-1]
        lengthscale = base.lengthscale.reshape(-1)
        k_x = _rbf(X, self.train_X[:, :d_x], lengthscale[:d_x])  # batch x n
        k_z = _rbf(Z, self.train_X[:, d_x:], lengthscale[d_x:])  # m x n
        return k_x, k_z, self.kernel.outputscale

    def bounds(self, X: Tensor, beta: float) -> tuple[Tensor, Tensor, Tensor]:
        """(l, mu, u) = mu -+ beta^(1/2) sigma at ``batch_shape x d`` points."""
        mean, std = self(X)
        width = math.sqrt(beta) * std
        return mean - width, mean, mean + width

    def grid_bounds(self, X: Tensor, Z: Tensor, beta: float) -> tuple[Tensor, Tensor, Tensor]:
        """(l, mu, u) on the x-by-Z grid, each ``batch_shape x m`` (see :meth:`grid`)."""
        mean, std = self.grid(X, Z)
        width = math.sqrt(beta) * std
        return mean - width, mean, mean + width


def _pairs(X: Tensor, Z: Tensor) -> Tensor:
    """Every (x, z) pair of ``batch_shape x d_x`` and ``m x d_z`` points: ``batch_shape x m x d``."""
    batch_shape, m = X.shape[:-1], Z.shape[0]
    return torch.cat([X.unsqueeze(-2).expand(*batch_shape, m, X.shape[-1]),
                      Z.expand(*batch_shape, m, Z.shape[-1])], dim=-1)


def _rbf(A: Tensor, B: Tensor, lengthscale: Tensor) -> Tensor:
    """exp(-|a - b|^2 / 2) of lengthscale-scaled points: ``... x p x d``, ``n x d`` -> ``... x p x n``."""
    diff = (A / lengthscale).unsqueeze(-2) - B / lengthscale
    return torch.exp(-0.5 * (diff * diff).sum(dim=-1))
