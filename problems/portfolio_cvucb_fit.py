"""Refit the hyperparameters of ``portfolio-cvucb-3-2``'s surrogate (``data/portfolio_cvucb_gp.json``).

    python -m problems.portfolio_cvucb_fit            # refit, print, compare with the stored file
    python -m problems.portfolio_cvucb_fit --write    # refit and rewrite the file

The model is the one the CV-UCB paper's code evaluates (``functions.py``,
``negative_portfolio_optimization_gaussian``): a constant mean, a scaled SE kernel with one
lengthscale per input, Gaussian noise, on the 3,000 back-tests as they are (inputs [0, 1]-scaled, y
not standardized). It is fitted here by maximum likelihood: BoTorch's ``SingleTaskGP`` with that
mean, kernel and likelihood and no outcome or input transform, the noise variance bounded below by
1e-4 (the lower bound of the source's ``fit_gp``), no priors, from GPyTorch's default initial values,
by ``fit_gpytorch_mll`` (scipy's L-BFGS-B, one attempt), in float64 at one thread with exact
Cholesky factorizations (GPyTorch would otherwise switch to conjugate gradients and stochastic
log-determinants above 800 points). Deterministic: the same versions and kernels give the same
bits; the stored values come from a pinned shell (``eval "$(python -m harness.kernels)"``, the
reference mode), 848 s. The native kernels' fit parted from it by 0.4 % in c and s, along which the
likelihood is flat (9e-5 apart in log-likelihood), and moved f by at most 4e-3 (of values near 10).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings

import torch

from problems.float64 import default_float64, torch_threads
from problems.portfolio_cvucb import PARAMETERS_FILE, load_data, load_parameters

#: The lower bound of the noise variance: the source's ``fit_gp(min_var=1e-4)``.
MIN_NOISE = 1e-4
#: What the stored file says besides the values.
ABOUT = ("Hyperparameters of the GP surrogate of portfolio-cvucb-3-2 (problems/portfolio_cvucb.py), "
         "refitted by maximum likelihood: the CV-UCB paper's code (qphong/BayesOpt-LV, MIT, commit b852a94, "
         "functions.py negative_portfolio_optimization_gaussian) reads its own from "
         "portfolio_data/GP_params.pkl, which is not available. Data: the 3,000 CVXPortfolio back-tests of "
         "BoRisk (Cakmak, Astudillo, Frazier & Zhou, NeurIPS 2020), qphong/BayesOpt-LV "
         "portfolio_data/data.pkl. Model: y = c + g(u) + noise, g ~ GP(0, s exp(-|(a - b) / l|^2 / 2)), "
         "u = (x1, x2, x3, z1, z2) in [0, 1]^5, y the negated return in percent (not standardized).")

COMMAND = "python -m problems.portfolio_cvucb_fit --write"
#: How, in one line (stored beside the values).
METHOD = ("maximum likelihood: botorch SingleTaskGP(mean_module=ConstantMean(), covar_module=ScaleKernel("
          "RBFKernel(ard_num_dims=5)), likelihood=GaussianLikelihood(noise >= 1e-4), no priors, "
          "outcome_transform=None, input_transform=None), GPyTorch's default initial values, "
          "fit_gpytorch_mll(max_attempts=1) (scipy L-BFGS-B), float64, one thread, exact Cholesky")


def fit_hyperparameters() -> dict:
    """Fit the surrogate's hyperparameters (see the module docstring).

    Returns:
        ``mean_constant``, ``outputscale``, ``noise_variance`` (floats), ``lengthscales`` (5 floats),
        the maximized ``log_marginal_likelihood`` (summed over the 3,000 points) and a ``fit``
        record (versions, seconds, optimizer status).
    """
    import botorch
    import gpytorch
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from gpytorch.mlls import ExactMarginalLogLikelihood

    X, Y = load_data()
    start = time.perf_counter()
    exact = gpytorch.settings.fast_computations(False, False, False)
    with default_float64(), torch_threads(1), gpytorch.settings.max_cholesky_size(10**6), exact, \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train_x, train_y = torch.from_numpy(X), torch.from_numpy(Y).unsqueeze(-1)
        likelihood = gpytorch.likelihoods.GaussianLikelihood(
            noise_constraint=gpytorch.constraints.GreaterThan(MIN_NOISE))
        kernel = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel(ard_num_dims=5))
        model = SingleTaskGP(train_x, train_y, likelihood=likelihood, covar_module=kernel,
                             mean_module=gpytorch.means.ConstantMean(), outcome_transform=None,
                             input_transform=None)
        mll = ExactMarginalLogLikelihood(likelihood, model)
        fit_gpytorch_mll(mll, max_attempts=1)
        model.train()
        with torch.no_grad():
            log_likelihood = mll(model(train_x), train_y.squeeze(-1)).item() * train_x.shape[0]
    return {
        "mean_constant": model.mean_module.constant.detach().item(),
        "outputscale": kernel.outputscale.detach().item(),
        "lengthscales": kernel.base_kernel.lengthscale.detach().reshape(-1).tolist(),
        "noise_variance": likelihood.noise.detach().item(),
        "log_marginal_likelihood": log_likelihood,
        "fit": {"botorch": botorch.__version__, "gpytorch": gpytorch.__version__, "torch": torch.__version__,
                "seconds": round(time.perf_counter() - start, 1),
                "warnings": [str(w.message).splitlines()[0] for w in caught]},
    }


def largest_relative_difference(fitted: dict, stored: dict) -> float:
    """The largest relative difference between two sets of hyperparameters.

    Args:
        fitted, stored: dicts with ``mean_constant``, ``outputscale``, ``noise_variance`` and 5
            ``lengthscales``.

    Returns:
        max |fitted - stored| / |stored| over the 8 numbers.
    """
    pairs = [(fitted[k], stored[k]) for k in ("mean_constant", "outputscale", "noise_variance")]
    pairs += list(zip(fitted["lengthscales"], stored["lengthscales"], strict=True))
    return max(abs(a - b) / max(abs(b), 1e-300) for a, b in pairs)


def main(argv: list[str] | None = None) -> int:
    """Refit; print the values and their difference from the stored ones; ``--write`` stores them.

    Args:
        argv: the command line's arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit status: 0, or 1 if the fit's likelihood is not finite or, without ``--write``, its
        values part from the stored ones by more than 1e-4 relative (the check a reader runs: 15-20
        minutes on one core, too long for the test suite).
    """
    parser = argparse.ArgumentParser(prog="python -m problems.portfolio_cvucb_fit",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite problems/data/portfolio_cvucb_gp.json")
    args = parser.parse_args(argv)
    fitted = fit_hyperparameters()
    print(json.dumps(fitted, indent=2))
    difference = 0.0
    if PARAMETERS_FILE.exists():
        difference = largest_relative_difference(fitted, load_parameters())
        print(f"largest relative difference from {PARAMETERS_FILE.name}: {difference:.3e}")
    if args.write:
        payload = {"about": ABOUT, "method": METHOD, "command": COMMAND, **fitted}
        PARAMETERS_FILE.write_text(json.dumps(payload, indent=2) + "\n")
        print(f"wrote {PARAMETERS_FILE}")
    agrees = args.write or difference < 1e-4
    return 0 if math.isfinite(fitted["log_marginal_likelihood"]) and agrees else 1


if __name__ == "__main__":
    sys.exit(main())
