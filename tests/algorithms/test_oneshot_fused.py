"""The fused one-shot KG against BoTorch's ``qMultiFidelityKnowledgeGradient`` on fantasy models (the
reference), at fixed inputs: values and both gradients; the exact gradient against finite
differences; the sample measure against the sorting measures and BoTorch's; the custom backward
against autograd through the Cholesky factor; the fused one-shot starts against BoTorch's."""

from __future__ import annotations

import gpytorch
import pytest
import torch
from botorch.acquisition.risk_measures import CVaR, VaR
from botorch.optim.initializers import gen_one_shot_kg_initial_conditions
from linear_operator.utils.cholesky import psd_safe_cholesky

from algorithms.botorch_risk import BotorchRisk
from algorithms.gp import fit_gp
from algorithms.oneshot_fused import FusedOneShotKG, SampleMeasure, _SampleRisk, fused_initial_conditions
from algorithms.rhokg_oneshot import RhoKGOneShot
from problems import build_problem
from problems.measures import risk_measure
from problems.risk import weighted_cvar, weighted_var

#: (problem, class, risk, options): a discrete Z with its masses, a continuous Z's draws, BoTorch's
#: measures over repeated draws (VaR and CVaR), the risk-neutral mean.
CASES = [
    ("hartmann6-5-1", RhoKGOneShot, "cvar", {}),
    ("newsvendor-1-2", RhoKGOneShot, "cvar", {"n_w": 12}),
    ("branin-williams-2-2", BotorchRisk, "var", {"n_w": 20}),
    ("hartmann-1-2-discrete", BotorchRisk, "cvar", {"n_w": 30}),
    ("branin-williams-2-2", RhoKGOneShot, "mean", {}),
]
SMALL = {"num_fantasies": 4, "inner_samples": 16}


def state(name: str, n: int = 14, seed: int = 0):
    """A problem and its harness GP fitted on ``n`` noisy observations at a random design."""
    problem = build_problem(name, with_optimum=False)
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, problem.d_x, generator=g, dtype=torch.float64)
    Z = problem.z.sample_support(n, g)
    Y = problem.observe(X, Z, torch.randn(n, generator=g, dtype=torch.float64)).unsqueeze(-1)
    model, _ = fit_gp(torch.cat([X, Z], -1), Y, None, refit=True, generator=torch.Generator().manual_seed(0))
    return problem, model


def pair(name: str, cls: type, risk: str, options: dict, gradient: str = "released"):
    """The reference and the fused acquisition of one iteration, and a batch of one-shot points."""
    problem, model = state(name)
    make = {engine: cls(problem, 0, risk=risk, engine=engine, gradient=gradient, **SMALL, **options)
            for engine in ("botorch", "fused")}
    reference, fused = (make[e].acquisition_function(model, 3) for e in ("botorch", "fused"))
    X = torch.rand(3, 1 + SMALL["num_fantasies"], problem.d_x + problem.d_z,
                   generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    return reference, fused, X


def value_and_gradient(acquisition, X: torch.Tensor, exact: bool = False) -> tuple[torch.Tensor, ...]:
    leaf = X.clone().requires_grad_(True)
    with gpytorch.settings.detach_test_caches(not exact):
        value = acquisition(leaf)
        (gradient,) = torch.autograd.grad(value.sum(), leaf)
    return value.detach(), gradient


@pytest.mark.parametrize("name,cls,risk,options", CASES)
def test_fused_values_and_gradients_are_botorchs(name: str, cls: type, risk: str, options: dict) -> None:
    """At the same one-shot points, the fused KG's values and gradients are BoTorch's to rounding:
    as released (covariance cache detached) and exact (GPyTorch's caches kept attached)."""
    for gradient in ("released", "exact"):
        reference, fused, X = pair(name, cls, risk, options, gradient)
        value, grad = value_and_gradient(reference, X, exact=gradient == "exact")
        fused_value, fused_grad = value_and_gradient(fused, X)
        scale = value.abs().max()
        assert torch.allclose(fused_value, value, rtol=0, atol=1e-10 * scale)
        assert torch.allclose(fused_grad, grad, rtol=0, atol=1e-8 * grad.abs().max())


def test_the_exact_gradient_is_the_values_and_the_released_one_is_not() -> None:
    """The exact gradient matches central differences of the value; the released one differs in the
    query's coordinates (what BoTorch's detached covariance cache drops) and not in the fantasy
    solutions'."""
    _, fused, X = pair("branin-williams-2-2", RhoKGOneShot, "mean", {}, "exact")
    _, exact = value_and_gradient(fused, X)
    h = 1e-6
    numeric = torch.zeros_like(X)
    with torch.no_grad():
        for index in torch.cartesian_prod(*(torch.arange(s) for s in X.shape)).tolist():
            step = torch.zeros_like(X)
            step[tuple(index)] = h
            numeric[tuple(index)] = ((fused(X + step) - fused(X - step)) / (2 * h))[index[0]]
    assert torch.allclose(exact, numeric, rtol=1e-5, atol=1e-6 * numeric.abs().max())
    fused.gradient = "released"
    _, released = value_and_gradient(fused, X)
    assert torch.allclose(released[:, 1:], exact[:, 1:], rtol=1e-12, atol=0)
    assert (released[:, 0] - exact[:, 0]).abs().max() > 1e-3 * exact[:, 0].abs().max()


@pytest.mark.parametrize("risk", ["var", "cvar", "mean"])
def test_sample_measure_is_the_sorting_measures_and_its_weights_their_gradient(risk: str) -> None:
    """On random rows (with ties), the sample measure's value is weighted_var / weighted_cvar / the
    weighted mean, and its weights are their gradients wherever the gradient is unique."""
    g = torch.Generator().manual_seed(3)
    values = torch.randn(200, 37, generator=g, dtype=torch.float64)
    values[::5, 3] = values[::5, 9]
    masses = torch.softmax(torch.randn(37, generator=g, dtype=torch.float64), 0)
    measure = SampleMeasure(risk_measure(risk), masses, 0.23)
    leaf = values.clone().requires_grad_(True)
    direct = {"var": weighted_var, "cvar": weighted_cvar}.get(risk, lambda v, p, a: v @ p)
    expected = direct(leaf, masses, 0.23)
    (expected_weights,) = torch.autograd.grad(expected.sum(), leaf)
    assert torch.allclose(measure(values), expected.detach(), rtol=0, atol=1e-13)
    untied = torch.ones(200, dtype=torch.bool)
    untied[::5] = False
    assert torch.allclose(measure.weights(values)[untied], expected_weights[untied], rtol=0, atol=1e-13)


@pytest.mark.parametrize("risk", ["var", "cvar"])
def test_sample_measure_at_botorchs_level_is_botorchs_measure_of_the_repeated_values(risk: str) -> None:
    """BoTorch's VaR and CVaR of N values repeated by counts equal the sample measure with masses
    counts / N at the level ``BotorchRisk.sample_measure`` reads from BoTorch's measure."""
    problem, _ = state("branin-williams-2-2")
    algorithm = BotorchRisk(problem, 0, risk=risk, n_w=23)
    _, counts = algorithm.w_set(2, 23, "acquisition")
    _, objective = algorithm.acquisition_set(2)
    values = torch.randn(50, counts.shape[0], generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    measure = algorithm.sample_measure(2)
    expected = objective(values.reshape(50, -1, 1)).reshape(50)
    assert torch.allclose(measure(values), expected, rtol=0, atol=1e-13)
    # and BoTorch's own measure on the expanded values, independently of the algorithm's objective
    expanded = values.repeat_interleave(counts, dim=-1)
    botorch = (VaR if risk == "var" else CVaR)(alpha=objective.alpha, n_w=int(counts.sum()))
    assert torch.allclose(measure(values), botorch(expanded.unsqueeze(-1)).reshape(50),
                          rtol=0, atol=1e-13)


def test_sample_risk_backward_is_autograds_through_the_cholesky_factor() -> None:
    """The custom backward (no covariance gradient formed) against autograd through
    ``psd_safe_cholesky``, the samples and the measure."""
    g = torch.Generator().manual_seed(5)
    B, m, r, S = 4, 9, 3, 11
    A = torch.randn(m, m + 2, generator=g, dtype=torch.float64)
    prior = A @ A.T + m * torch.eye(m, dtype=torch.float64)
    root = (0.5 * torch.randn(B, m, r, generator=g, dtype=torch.float64)).requires_grad_(True)
    mean = torch.randn(B, m, generator=g, dtype=torch.float64).requires_grad_(True)
    zeta = torch.randn(S, m, generator=g, dtype=torch.float64)
    masses = torch.softmax(torch.randn(m, generator=g, dtype=torch.float64), 0)
    measure = SampleMeasure(risk_measure("cvar"), masses, 0.3)
    upstream = torch.rand(B, S, generator=g, dtype=torch.float64)
    fused = _SampleRisk.apply(mean, root, prior, zeta, measure)
    grads = torch.autograd.grad((fused * upstream).sum(), (mean, root))
    factor = psd_safe_cholesky(prior - root @ root.transpose(-1, -2))
    samples = mean.unsqueeze(-2) + zeta @ factor.transpose(-1, -2)
    direct = weighted_cvar(samples, measure.masses, 0.3)
    expected = torch.autograd.grad((direct * upstream).sum(), (mean, root))
    assert torch.allclose(fused, direct, rtol=0, atol=1e-12)
    for got, want in zip(grads, expected, strict=True):
        assert torch.allclose(got, want, rtol=0, atol=1e-11)


def test_fused_starts_are_botorchs() -> None:
    """With the same random state, the fused one-shot starts equal BoTorch's
    ``gen_one_shot_kg_initial_conditions`` (a smooth value function: the mean, so that both inner
    optimizations follow the same path)."""
    reference, fused, _ = pair("branin-williams-2-2", RhoKGOneShot, "mean", {})
    problem = build_problem("branin-williams-2-2", with_optimum=False)
    bounds = RhoKGOneShot(problem, 0, risk="mean").bounds
    starts = {}
    for name, acquisition, generate in (("botorch", reference, gen_one_shot_kg_initial_conditions),
                                        ("fused", fused, fused_initial_conditions)):
        with torch.random.fork_rng():
            torch.manual_seed(11)
            starts[name] = generate(acq_function=acquisition, bounds=bounds, q=1, num_restarts=3,
                                    raw_samples=16, options={"num_inner_restarts": 3,
                                                             "raw_inner_samples": 32})
    assert torch.allclose(starts["fused"], starts["botorch"], rtol=0, atol=1e-6)


def test_fused_proposal_is_a_point_of_the_box_and_the_support() -> None:
    """A whole fused proposal: x in [0, 1]^d_x, z on the discrete support, the KG value reported."""
    problem, model = state("hartmann6-5-1")
    algorithm = RhoKGOneShot(problem, 0, risk="cvar", engine="fused", num_restarts=2, raw_samples=8,
                             maxiter=5, inner_restarts=2, raw_inner_samples=16, **SMALL)
    proposal = algorithm.propose(model, 1)
    assert ((proposal.x >= 0) & (proposal.x <= 1)).all()
    assert (problem.z.points == proposal.z).all(dim=-1).any()
    assert proposal.info["kg_support"] >= proposal.info["kg"] - 1e-9


@pytest.mark.parametrize("key,value", [("engine", "fast"), ("gradient", "approximate")])
def test_bad_engine_or_gradient_is_one_line(key: str, value: str) -> None:
    problem, _ = state("hartmann6-5-1")
    with pytest.raises(ValueError, match=f"{key} must be one of"):
        RhoKGOneShot(problem, 0, risk="cvar", **{key: value})


def test_a_non_stationary_kernel_is_refused() -> None:
    problem, model = state("hartmann6-5-1")
    model.covar_module = model.covar_module.base_kernel  # no ScaleKernel
    algorithm = RhoKGOneShot(problem, 0, risk="cvar", engine="fused", **SMALL)
    with pytest.raises(TypeError, match="stationary ScaleKernel"):
        algorithm.acquisition_function(model, 1)


def test_fused_kg_holds_botorchs_sampler_draws() -> None:
    """The base samples the fused KG uses are the samplers' own (the same fantasies, the same
    inner samples as BoTorch's path)."""
    reference, fused, X = pair("hartmann6-5-1", RhoKGOneShot, "cvar", {})
    reference(X)  # BoTorch draws its base samples on first use
    assert torch.equal(fused.eps, reference.sampler.base_samples.reshape(-1))
    assert torch.equal(fused.joint.zeta, reference.inner_sampler.base_samples.reshape(fused.joint.zeta.shape))
    assert isinstance(fused, FusedOneShotKG)
