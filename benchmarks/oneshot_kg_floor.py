"""What the fused one-shot KG's arithmetic allows: one call of it taken apart, against the matrix
products that any implementation of the same computation must make.

    python benchmarks/oneshot_kg_floor.py [--case PROBLEM/METHOD/RISK/N] [--batch B] [--reps R]

For one case (default: the one-shot rho-KG on Hartmann-6 (1,5) with CVaR at |D| = 60, the middle of a
suite run; a random design and the harness's GP, as ``oneshot_kg_speedup.py``) it takes one KG call
with its gradient at a batch of ``--batch`` one-shot points (``optimize_acqf``'s batch limit: 5) and
prints, in one process, each engine alternating:

* BoTorch's call and the fused call, their seconds and ratio (as the speed-up benchmark);
* the fused call's pieces (the sampled risk's forward: the covariance of every fantasy's joint
  posterior, its Cholesky factor, the samples, the measure's weights; its backward; the rest:
  kernel calls and whitening), each timed on its own at the call's own tensors;
* the dense products of the sampled risk, counted (the covariance, 2 B m^2 r flops; the samples,
  2 B S m^2; the backward's L^T G^T zeta, 4 B S m^2, its Psi W and two triangular solves, 4 B m^2 r:
  B = batch x fantasies, m the w set, S the inner samples, r = |D| + 1) and their time at two rates:
  the rate at which this core runs those products here, and this core's large-DGEMM rate (1000^3);
* the ratio BoTorch's call / that time: the most a same-computation engine could gain over BoTorch
  on this core if it did nothing but those products;
* the work that no rearrangement shares among fantasies (each fantasy's covariance, its Cholesky
  factor, L^T G^T, Psi W and the two solves: :data:`PER_FANTASY`) at the rates it runs at here, and
  the ratio BoTorch's call / that time: what an engine that keeps MKL's batched kernels could reach at
  most, everything else (kernels, the measure's weights, the products with the shared zeta) free.

Torch runs on one thread, as in a grid; seconds depend on what else the machine does, ratios less.
"""

from __future__ import annotations

import argparse
import platform
import time
import warnings
from collections.abc import Callable

import torch
from linear_operator.utils.cholesky import psd_safe_cholesky
from linear_operator.utils.warnings import NumericalWarning
from states import fitted_state  # a sibling module: the benchmarks run as scripts

from algorithms import oneshot_fused
from algorithms.registry import algorithm_factory
from problems.float64 import default_float64


def seconds(function: Callable[[], object], reps: int) -> float:
    """The mean seconds of ``function()`` over ``reps`` calls, after one call to warm up."""
    function()
    start = time.perf_counter()
    for _ in range(reps):
        function()
    return (time.perf_counter() - start) / reps


def gradient_call(acquisition, X: torch.Tensor) -> Callable[[], object]:
    """One value of ``acquisition`` at ``X`` with its gradient in ``X``."""
    def call() -> object:
        leaf = X.clone().requires_grad_(True)
        return torch.autograd.grad(acquisition(leaf).sum(), leaf)
    return call


def captured_risk_inputs(fused, X: torch.Tensor) -> tuple:
    """The tensors the fused KG hands to its sampled risk at ``X`` (mean, root, prior, zeta, measure)."""
    seen = []
    original = oneshot_fused._SampleRisk.apply

    def spy(*args):
        seen.append(tuple(a.detach() if isinstance(a, torch.Tensor) else a for a in args))
        return original(*args)

    oneshot_fused._SampleRisk.apply = spy
    try:
        with torch.no_grad():
            fused(X)
    finally:
        oneshot_fused._SampleRisk.apply = original
    return seen[0]


def pieces(inputs: tuple, reps: int) -> dict[str, float]:
    """Seconds of each step of the sampled risk's forward and backward (``_SampleRisk``), at its inputs."""
    mean, root, prior, zeta, measure = inputs
    B = mean.shape[0]
    cov = torch.baddbmm(prior, root, root.transpose(-1, -2), alpha=-1)
    factor = psd_safe_cholesky(cov)
    samples = torch.baddbmm(mean.unsqueeze(-2), zeta.expand(B, *zeta.shape), factor.transpose(-1, -2))
    weights = measure.weights(samples)
    grad = weights / samples.shape[-2]
    # L^T G^T zeta in _SampleRisk.backward's order: (L^T G^T) zeta where m > S, else L^T (G^T zeta)
    Lt, Gt = factor.transpose(-1, -2), grad.transpose(-1, -2)
    lt_first = mean.shape[-1] > zeta.shape[0]
    first = Lt @ Gt if lt_first else Gt @ zeta
    M = first @ zeta if lt_first else Lt @ first

    def per_fantasy() -> torch.Tensor:  # the product with L^T: both operands each fantasy's own
        return Lt @ Gt if lt_first else Lt @ first

    def shared() -> torch.Tensor:  # the product with zeta, which every fantasy shares
        return first @ zeta if lt_first else Gt @ zeta

    m = mean.shape[-1]

    def psi_of(M: torch.Tensor) -> torch.Tensor:  # as _SampleRisk.backward: Phi(M) + Phi(M)^T
        diagonal = M.diagonal(dim1=-2, dim2=-1).clone()
        low = M.masked_fill_(oneshot_fused._upper_mask(m), 0.0)
        psi = low + low.transpose(-1, -2)
        psi.diagonal(dim1=-2, dim2=-1).copy_(diagonal)
        return psi

    psi = psi_of(M.clone())

    def tail() -> torch.Tensor:  # then -L^{-T} Psi (L^{-1} H)
        whitened = torch.linalg.solve_triangular(factor, root, upper=False)
        return -torch.linalg.solve_triangular(factor.transpose(-1, -2), psi @ whitened, upper=True)

    return {
        "covariance (product)": seconds(lambda: torch.baddbmm(prior, root, root.transpose(-1, -2), alpha=-1),
                                        reps),
        "Cholesky factor": seconds(lambda: psd_safe_cholesky(cov), reps),
        "samples (product)": seconds(lambda: torch.baddbmm(mean.unsqueeze(-2), zeta.expand(B, *zeta.shape),
                                                           factor.transpose(-1, -2)), reps),
        "measure's weights": seconds(lambda: measure.weights(samples), reps),
        "weighted sum": seconds(lambda: (weights * samples).sum(dim=-1), reps),
        "backward: the product with L^T (products)": seconds(per_fantasy, reps),
        "backward: the product with zeta (products)": seconds(shared, reps),
        "backward Psi, with a copy of M": seconds(lambda: psi_of(M.clone()), reps),
        "backward Psi W, 2 solves (products)": seconds(tail, reps),
    }


#: The steps whose operands all differ from one fantasy to the next (each fantasy's own covariance and
#: factor): no rearrangement turns them into one large product, unlike the samples and the product with
#: zeta, whose zeta every fantasy shares.
PER_FANTASY = ("covariance (product)", "Cholesky factor", "backward: the product with L^T (products)",
               "backward Psi W, 2 solves (products)")


def product_flops(inputs: tuple) -> float:
    """The dense products' flops of one sampled risk with its backward (the module docstring)."""
    mean, root, _, zeta, _ = inputs
    B, m, r, S = mean.shape[0], mean.shape[-1], root.shape[-1], zeta.shape[0]
    return 2 * B * m * m * r + 2 * B * S * m * m + 4 * B * S * m * m + 4 * B * m * m * r


def dgemm_rate(reps: int) -> float:
    """This core's large-DGEMM rate, flop/s (1000 x 1000 by 1000 x 1000)."""
    a, b = torch.randn(1000, 1000, dtype=torch.float64), torch.randn(1000, 1000, dtype=torch.float64)
    return 2e9 / seconds(lambda: a @ b, reps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", default="hartmann6-1-5/rhokg-oneshot/cvar/60",
                        metavar="PROBLEM/METHOD/RISK/N")
    parser.add_argument("--batch", type=int, default=5, help="one-shot points a call (default 5)")
    parser.add_argument("--reps", type=int, default=5, help="timed repetitions of each step (default 5)")
    args = parser.parse_args()
    parts = args.case.split("/")
    if len(parts) != 4 or not parts[3].isdigit() or args.batch < 1 or args.reps < 1:
        parser.error(f"--case must be PROBLEM/METHOD/RISK/N with N an integer, --batch and --reps >= 1 "
                     f"(got {args.case!r}, {args.batch}, {args.reps})")
    name, method, risk, n = parts
    torch.set_num_threads(1)
    warnings.simplefilter("ignore", NumericalWarning)
    with default_float64():
        problem, model = fitted_state(name, int(n), "oneshot-benchmark")
        engines = {engine: algorithm_factory(method)(problem, 0, risk=risk, engine=engine, gradient="exact")
                   for engine in ("botorch", "fused")}
        kgs = {engine: algorithm.acquisition_function(model, 1) for engine, algorithm in engines.items()}
        d = problem.d_x + problem.d_z
        X = torch.rand(args.batch, 1 + kgs["fused"].num_fantasies, d,
                       generator=torch.Generator().manual_seed(0))
        with engines["botorch"]._gradient_mode():
            calls = {engine: seconds(gradient_call(kg, X), args.reps) for engine, kg in kgs.items()}
        inputs = captured_risk_inputs(kgs["fused"], X)
        steps = pieces(inputs, args.reps)
        flops = product_flops(inputs)
        products = sum(v for k, v in steps.items() if "product" in k)
        peak = dgemm_rate(args.reps)
    mean, root, _, zeta, _ = inputs
    print(f"{platform.processor() or platform.machine()}, torch {torch.__version__}, 1 thread; {args.case}, "
          f"batch {args.batch}: B = {mean.shape[0]} fantasy points, m = {mean.shape[-1]}, "
          f"S = {zeta.shape[0]}, r = {root.shape[-1]}")
    print(f"BoTorch's call {calls['botorch'] * 1e3:8.1f} ms | fused {calls['fused'] * 1e3:8.1f} ms | "
          f"ratio {calls['botorch'] / calls['fused']:.1f}")
    for step, value in steps.items():
        print(f"  {step:36s} {value * 1e3:8.1f} ms  {value / calls['fused']:5.0%} of the fused call")
    rest = calls["fused"] - sum(steps.values())
    label = "the rest (kernels, whitening, autograd)"
    print(f"  {label:36s} {rest * 1e3:8.1f} ms  {rest / calls['fused']:5.0%}")
    print(f"dense products {flops / 1e9:.2f} GFlop: {products * 1e3:.1f} ms here "
          f"({flops / products / 1e9:.1f} GFlop/s), {flops / peak * 1e3:.1f} ms at this core's DGEMM rate "
          f"({peak / 1e9:.1f} GFlop/s)")
    print(f"most a same-computation engine gains over BoTorch here: {calls['botorch'] / products:.1f}x at "
          f"these products' rate, {calls['botorch'] / (flops / peak):.1f}x at the DGEMM rate")
    own = sum(steps[k] for k in PER_FANTASY)
    print(f"work with no operand shared across fantasies ({', '.join(PER_FANTASY)}): {own * 1e3:.1f} ms, "
          f"so at most {calls['botorch'] / own:.1f}x BoTorch's call at the rates it runs at here")


if __name__ == "__main__":
    main()
