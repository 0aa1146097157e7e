"""rho-KG^apx: the risk estimate against brute-force Monte Carlo, the fast acquisition value against
the straightforward BoTorch one, the two-time-scale path, the recommendation rule, a short run."""

import math

import numpy as np
import pytest
import torch
from botorch.utils.sampling import draw_sobol_normal_samples
from torch import Tensor

from algorithms.gp import fit_gp
from algorithms.rhokg import (
    FastRhoKG,
    RhoKGAcquisition,
    RhoKGApx,
    WSet,
    borisk_cvar_equal,
    borisk_cvar_weighted,
)
from algorithms.rhokg_reference import reference_value
from harness.cell import CellSpec, run_cell
from problems import build_problem, weighted_cvar
from problems.seeding import generator


def small_model(name: str, n: int, seed: int):
    p = build_problem(name, with_optimum=False)
    g = generator("rhokg-test", seed)
    X = torch.rand(n, p.d_x, generator=g, dtype=torch.float64)
    Z = p.z.sample_support(n, g)
    Y = p.observe(X, Z, torch.randn(n, generator=g, dtype=torch.float64)).unsqueeze(-1)
    model, _ = fit_gp(torch.cat([X, Z], -1), Y, None, refit=True,
                      generator=torch.Generator().manual_seed(0))
    return p, model, X


def base_samples(K: int, M: int, m: int, seed: int):
    eps_now = draw_sobol_normal_samples(m, M, dtype=torch.float64, seed=seed)
    xi = draw_sobol_normal_samples(1, K, dtype=torch.float64, seed=seed + 1).reshape(-1)
    eps = draw_sobol_normal_samples(K * m, M, dtype=torch.float64, seed=seed + 2)
    return eps_now, xi, eps.reshape(M, K, m).transpose(0, 1).contiguous()


def test_risk_estimate_matches_brute_force_monte_carlo() -> None:
    # E_n[VaR] with many samples against an independent Monte Carlo with numpy's own sampler
    p, model, X = small_model("branin-1-1-discrete", 8, 0)
    w = WSet(p.z.points[::10], torch.softmax(-((p.z.points[::10, 0] - 0.5) ** 2) / 0.02, 0))
    m, M = w.points.shape[0], 4096
    eps_now = draw_sobol_normal_samples(m, M, dtype=torch.float64, seed=3)
    est = FastRhoKG(model, w, 0.3, X, eps_now, eps_now.reshape(1, M, m))
    x = torch.tensor([[0.2], [0.7]], dtype=torch.float64)
    fast = est.estimate_now(x).numpy()
    rng = np.random.default_rng(0)
    for i in range(2):
        A = torch.cat([x[i].expand(m, 1), w.points], -1)
        with torch.no_grad():
            post = model.posterior(A)
            mean = post.mean.squeeze(-1).numpy()
            cov = post.mvn.covariance_matrix.numpy()
        draws = rng.multivariate_normal(mean, cov + 1e-10 * np.eye(m), size=200_000,
                                        method="eigh")
        order = np.argsort(draws, axis=-1)
        cumulative = np.cumsum(w.weights.numpy()[order], axis=-1)
        first = np.argmax(cumulative >= 0.3 - 1e-12, axis=-1)
        var = np.take_along_axis(draws, order, -1)[np.arange(draws.shape[0]), first]
        standard_error = var.std() / math.sqrt(M)
        assert abs(fast[i] - var.mean()) < 4 * standard_error + 1e-3, (fast[i], var.mean())


@pytest.mark.parametrize("root", ["update", "cholesky"])
@pytest.mark.parametrize("kind", ["discrete", "continuous"])
def test_fast_value_equals_the_straightforward_one(root: str, kind: str) -> None:
    p, model, X = small_model("branin-1-1-discrete", 10, 1)
    g = torch.Generator().manual_seed(2)
    if kind == "discrete":
        w = WSet(p.z.points, p.z.masses)
    else:
        w = WSet(0.25 + 0.5 * torch.rand(10, 1, generator=g, dtype=torch.float64),
                 torch.full((10,), 0.1, dtype=torch.float64))
    K, M, m = 6, 7, w.points.shape[0]
    eps_now, xi, eps = base_samples(K, M, m, 11)
    est = FastRhoKG(model, w, 0.1, X, eps_now, eps, root=root)
    best = float(est.now_past.max())
    candidates = torch.rand(5, 2, generator=g, dtype=torch.float64)
    fast = RhoKGAcquisition(model, est, xi, eps, best, tts_frequency=1)(candidates.unsqueeze(-2))
    slow = [reference_value(model, c, w, 0.1, X, xi, eps, best, root=root) for c in candidates]
    np.testing.assert_allclose(fast.detach().numpy(), slow, rtol=0, atol=1e-7)


def test_two_time_scale_reuse_evaluates_each_fantasy_at_its_remembered_argmax() -> None:
    p, model, X = small_model("hartmann-1-2-discrete", 12, 2)
    w = WSet(p.z.points, p.z.masses)
    K, M, m = 5, 6, w.points.shape[0]
    eps_now, xi, eps = base_samples(K, M, m, 5)
    est = FastRhoKG(model, w, 0.1, X, eps_now, eps)
    candidates = torch.rand(3, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    acq = RhoKGAcquisition(model, est, xi, eps, 0.0, tts_frequency=3)
    first = acq(candidates.unsqueeze(-2))  # searches S
    full = est.fantasy_estimates(candidates, xi, eps)  # b x J x K
    torch.testing.assert_close(first, full.max(dim=1).values.mean(-1))
    moved = candidates.clone()
    moved[:, 0] += 0.01  # the candidate moves; its remembered x' stay where they were
    second = acq(moved.unsqueeze(-2))
    remembered = est.fantasy_estimates(moved, xi, eps, inner=acq.inner)[:, 0].mean(-1)
    torch.testing.assert_close(second, remembered)


def test_recommendation_is_the_past_x_with_the_best_estimate() -> None:
    p, model, _ = small_model("branin-1-1-discrete", 9, 3)
    algorithm = RhoKGApx(p, seed_root=4)
    train_X = model.train_inputs[0]
    rec = algorithm.recommend(model, train_X)
    est = algorithm.estimator(model, train_X, f"recommend-{train_X.shape[0]}")
    values = est.estimate_now(algorithm.observed_x(train_X))
    assert torch.equal(rec.x, algorithm.observed_x(train_X)[int(values.argmax())])
    assert rec.info["var_mean_rec"] == pytest.approx(float(values.max()))


def test_bad_options_are_rejected() -> None:
    p = build_problem("branin-1-1-discrete", with_optimum=False)
    with pytest.raises(ValueError, match="num_fantasies"):
        RhoKGApx(p, 0, num_fantasies=0)
    with pytest.raises(TypeError):
        RhoKGApx(p, 0, nope=1)


def test_a_short_rhokg_run_on_branin_lowers_the_regret() -> None:
    # reduced search effort (the estimator is unchanged) so that the test takes seconds
    options = {"restarts_per_dim": 2, "raw_per_restart": 10, "maxiter": 100}
    rows = run_cell(CellSpec.make("branin-1-1-discrete", "rhokg-apx", seed=1, iterations=8,
                                  options=options)).rows
    assert all(len(r["z"]) == 1 for r in rows[1:])
    support = build_problem("branin-1-1-discrete", with_optimum=False).z.points[:, 0].tolist()
    assert all(r["z"][0] in support for r in rows[1:])  # w stays on the discrete support
    assert min(r["regret"] for r in rows[1:]) < rows[0]["regret"]


def searched_estimator(name: str):
    """An estimator (K = 4, M = 5) after one full search over S at 3 random candidates (w on the
    support), with what the search kept for the two-time-scale reuse: (X, est, xi, eps,
    candidates, kept)."""
    p, model, X = small_model(name, 10, 3)
    w = WSet(p.z.points, p.z.masses)
    eps_now, xi, eps = base_samples(4, 5, w.points.shape[0], 8)
    est = FastRhoKG(model, w, 0.1, X, eps_now, eps)
    g = torch.Generator().manual_seed(4)
    candidates = torch.rand(3, p.d_x + p.d_z, generator=g, dtype=torch.float64)
    candidates[:, p.d_x:] = p.z.points[torch.randint(p.z.size, (3,), generator=g)]
    kept: dict = {}
    est.fantasy_estimates(candidates, xi, eps, keep=kept)
    return X, est, xi, eps, candidates, kept


def test_cached_two_time_scale_path_equals_refactoring_the_remembered_points() -> None:
    """The cached factors of the remembered x' (the candidate's own x at search time, index 0, or
    a past x) give the same values as factoring those x' afresh."""
    X, est, xi, eps, candidates, kept = searched_estimator("branin-1-1-discrete")
    index = torch.tensor([[0, 1, 3, 0], [2, 0, 0, 5], [4, 4, 0, 1]])  # own x and past x mixed
    S = torch.cat([candidates[:, None, :1], X.expand(3, -1, -1)], dim=1)
    inner = torch.gather(S, 1, index.unsqueeze(-1))
    moved = candidates + torch.tensor([0.01, 0.0], dtype=torch.float64)  # the candidates move on
    cached = est.remembered_estimates(moved, xi, eps, index, kept)
    fresh = est.fantasy_estimates(moved, xi, eps, inner=inner)[:, 0]
    torch.testing.assert_close(cached, fresh, rtol=0, atol=1e-9)


def test_remembered_factors_are_the_kept_rows_and_the_past_rows(monkeypatch) -> None:
    """The two-time-scale path gathers each (candidate, fantasy)'s factors from one table: they
    must be exactly the kept candidate's where the index is 0 and past x' index - 1's elsewhere,
    in the same memory layout as the element-wise choice between the two that it replaced (a
    triangular solve rounds differently on a row-major factor), so that the estimates are the same
    bit for bit; also for a smaller batch."""
    _, est, xi, eps, candidates, kept = searched_estimator("hartmann-1-2-discrete")
    K = xi.shape[0]
    index = torch.tensor([[0, 1, 3, 0], [2, 0, 0, 5], [4, 4, 0, 1]])
    moved = candidates + torch.tensor([0.01, 0.0, 0.0], dtype=torch.float64)

    def chosen(self, kept: dict, index: Tensor, b: int, K: int) -> tuple[Tensor, ...]:  # the old code
        own, past = (index == 0)[..., None, None], (index - 1).clamp_min(0)
        k = torch.arange(K)
        return (torch.where(own, kept["A"][:b, None], self.A_past[past]),
                torch.where(own, kept["V"][:b, None], self.V_past[past]),
                torch.where(own, kept["L"][:b, None], self.L_past[past]),
                torch.where(own, kept["mean_base"][:b][:, k], self.mean_base_past[past, k]))

    for b in (3, 2):
        got = est._remembered_factors(kept, index[:b], b, K)
        for a, e in zip(got, chosen(est, kept, index[:b], b, K), strict=True):
            assert torch.equal(a, e) and a.stride() == e.stride()
        gathered = est.remembered_estimates(moved[:b], xi, eps, index[:b], kept)
        with monkeypatch.context() as patch:
            patch.setattr(FastRhoKG, "_remembered_factors", chosen)
            assert torch.equal(gathered, est.remembered_estimates(moved[:b], xi, eps, index[:b], kept))


@pytest.mark.parametrize(("name", "n", "K", "options"), [
    ("hartmann-1-2-discrete", 40, 10, {}),
    ("hartmann-1-2-discrete", 25, 4, {}),
    ("branin-1-1-continuous", 30, 10, {}),
    ("hartmann-1-2-discrete", 40, 10, {"risk": "cvar"}),  # the coherent bounds
    ("hartmann-1-2-discrete", 25, 4, {"risk": "cvar", "cvar_formula": "released"}),
    ("branin-1-1-continuous", 30, 10, {"risk": "cvar"}),
])
def test_pruning_leaves_the_max_over_s_and_its_gradient_bit_for_bit(name: str, n: int, K: int,
                                                                     options: dict) -> None:
    """The acquisition prunes past x' that provably cannot hold the max over S; the max, its
    argmax and the gradient with respect to the candidates must be exactly those of the estimator
    that computes every x' (torch.equal, not a tolerance), with and without autograd. For CVaR
    the pruning (the coherent bounds) must also leave fewer pairs than VaR's range bounds would."""
    p, model, _ = small_model(name, n, 3)
    algorithm = RhoKGApx(p, seed_root=5, **options)
    train_X = model.train_inputs[0]
    est, _, (xi, eps, xi_low) = algorithm._iteration_estimator(model, train_X, 1)
    assert (est.attained is None) == (algorithm.risk == "var")
    xi = xi if K == algorithm.K else xi_low
    g = torch.Generator().manual_seed(n)
    pruned_share = []
    for b in (1, 7, 16):
        candidates = torch.rand(b, p.d_x + p.d_z, generator=g, dtype=torch.float64)
        if p.z.is_discrete:
            candidates[:, p.d_x:] = p.z.points[torch.randint(p.z.size, (b,), generator=g)]
        else:
            low, high = p.z.bounds
            candidates[:, p.d_x:] = low + (high - low) * candidates[:, p.d_x:]
        results = []
        for prune in (False, True):
            x = candidates.clone().requires_grad_(True)
            values = est.fantasy_estimates(x, xi, eps[:K], prune=prune)
            best, where = values.max(dim=1)
            best.mean(-1).sum().backward()
            with torch.no_grad():
                quiet = est.fantasy_estimates(candidates, xi, eps[:K], prune=prune)
            results.append((values.detach(), best.detach(), where, x.grad, quiet))
        (dense, best0, where0, grad0, quiet0), (sparse, best1, where1, grad1, quiet1) = results
        assert torch.equal(best0, best1) and torch.equal(where0, where1)
        assert torch.equal(grad0, grad1)
        assert torch.equal(quiet0.max(1).values, quiet1.max(1).values)
        assert torch.equal(quiet0.max(1).indices, quiet1.max(1).indices)
        # what is computed is the same number; what is pruned lies below the max
        for full, part in ((dense, sparse), (quiet0, quiet1)):
            done = torch.isfinite(part)
            assert torch.equal(full[done], part[done])
            assert bool((full[~done] < full.max(1, keepdim=True).values.expand_as(full)[~done]).all())
        pruned_share.append(float((~torch.isfinite(quiet1)).float().mean()))
        if est.attained is not None:  # the same pairs with the range bounds of VaR's pruning
            attained, est.attained = est.attained, None
            with torch.no_grad():
                ranged = est.fantasy_estimates(candidates, xi, eps[:K], prune=True)
            est.attained = attained
            assert torch.equal(ranged.max(1).values, quiet1.max(1).values)
            assert int(torch.isfinite(quiet1).sum()) <= int(torch.isfinite(ranged).sum())
            pruned_share[-1] -= float((~torch.isfinite(ranged)).float().mean())
    # the pruning does prune; for CVaR, the coherent bounds prune more than the range bounds
    assert max(pruned_share) > (0.0 if options else 0.3), pruned_share


def test_estimate_bounds_hold_by_brute_force() -> None:
    """Every mean over samples of VaR(a + v coef), computed row by row with numpy's sort, lies
    within the bounds the pruning uses, and a bound is reached when v is constant."""
    from algorithms.rhokg_estimator import estimate_bounds

    g = torch.Generator().manual_seed(0)
    b, P, K, M, m, alpha = 3, 4, 5, 6, 9, 0.3
    masses = torch.rand(m, generator=g, dtype=torch.float64)
    masses /= masses.sum()

    def brute_var(rows: np.ndarray) -> np.ndarray:  # the definition: first sorted value reaching alpha
        order = np.argsort(rows, axis=-1, kind="stable")
        reach = np.cumsum(masses.numpy()[order], axis=-1) >= alpha - 1e-12
        return np.take_along_axis(rows, order, -1)[..., :][np.arange(rows.shape[0]), reach.argmax(-1)]

    a = torch.randn(P, K, M, m, generator=g, dtype=torch.float64)
    centre = torch.from_numpy(brute_var(a.reshape(-1, m).numpy()).reshape(P, K, M)).mean(-1)
    for v in (torch.randn(b, P, m, generator=g, dtype=torch.float64),  # mixed signs
              torch.rand(b, P, m, generator=g, dtype=torch.float64),  # one sign
              torch.full((b, P, m), 0.7, dtype=torch.float64)):  # constant: the VaR shifts exactly
        coef = 3 * torch.randn(b, P, K, M, generator=g, dtype=torch.float64)
        rows = a.unsqueeze(0) + v[:, :, None, None, :] * coef.unsqueeze(-1)
        exact = torch.from_numpy(brute_var(rows.reshape(-1, m).numpy()).reshape(b, P, K, M)).mean(-1)
        lower, upper = estimate_bounds(centre, v, coef)
        assert bool((lower <= exact + 1e-12).all() and (exact <= upper + 1e-12).all())
        if bool((v == v[..., :1]).all()):
            assert torch.allclose(lower, exact, atol=1e-12) and torch.allclose(upper, exact, atol=1e-12)


@pytest.mark.parametrize("formula", ["exact", "released"])
def test_coherent_bounds_hold_by_brute_force(formula: str) -> None:
    """Every mean over samples of CVaR(a + v coef), each CVaR taken from its definition with numpy
    (sorted values, each weighing its mass's share of [0, alpha]; BoRisk's released acquisition
    formula: the mean of its k smallest), lies within the coherent bounds the CVaR pruning uses;
    the upper bound is reached at coef = 0 and both when v is constant."""
    from algorithms.rhokg import measures
    from algorithms.rhokg_estimator import coherent_bounds

    g = torch.Generator().manual_seed(1)
    b, P, K, M, m, alpha = 3, 4, 5, 6, 11, 0.3
    masses = torch.rand(m, generator=g, dtype=torch.float64)
    masses /= masses.sum()
    _, _, attained = measures("cvar", formula)

    def brute(rows: np.ndarray) -> np.ndarray:
        if formula == "released":
            k = m - int(m * (1.0 - alpha))
            return np.sort(rows, axis=-1)[:, :k].mean(-1)
        order = np.argsort(rows, axis=-1, kind="stable")
        share = np.diff(np.minimum(np.cumsum(masses.numpy()[order], axis=-1), alpha), axis=-1, prepend=0.0)
        return (np.take_along_axis(rows, order, -1) * share).sum(-1) / alpha

    def estimate(rows: Tensor) -> Tensor:  # ... x M x m -> ... (mean over the M samples)
        return torch.from_numpy(brute(rows.reshape(-1, m).numpy()).reshape(rows.shape[:-1])).mean(-1)

    a = torch.randn(P, K, M, m, generator=g, dtype=torch.float64)
    weights = attained(a, masses, alpha)
    centre, attained_centre = estimate(a), (weights * a).sum(-1).mean(-1)
    torch.testing.assert_close(attained_centre, centre, rtol=0, atol=1e-12)  # attained: w . a = CVaR(a)
    for v in (torch.randn(b, P, m, generator=g, dtype=torch.float64),  # mixed signs
              torch.rand(b, P, m, generator=g, dtype=torch.float64),  # one sign
              torch.full((b, P, m), 0.7, dtype=torch.float64)):  # constant: the CVaR shifts exactly
        for coef in (3 * torch.randn(b, P, K, M, generator=g, dtype=torch.float64), torch.zeros(b, P, K, M)):
            exact = estimate(a.unsqueeze(0) + v[:, :, None, None, :] * coef.unsqueeze(-1))
            rho_v = torch.from_numpy(brute(v.reshape(-1, m).numpy())).reshape(b, P)
            rho_minus_v = torch.from_numpy(brute(-v.reshape(-1, m).numpy())).reshape(b, P)
            lower, upper = coherent_bounds(centre, weights, attained_centre, v, coef, rho_v, rho_minus_v)
            assert bool((lower <= exact + 1e-12).all() and (exact <= upper + 1e-12).all())
            if not coef.any():
                torch.testing.assert_close(upper, exact, rtol=0, atol=1e-12)
            if bool((v == v[..., :1]).all()):
                torch.testing.assert_close(lower, exact, rtol=0, atol=1e-12)
                torch.testing.assert_close(upper, exact, rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# CVaR


def test_cvar_estimate_matches_brute_force_monte_carlo() -> None:
    """E_n[CVaR] (the exact formula) against numpy draws whose CVaR is taken from its definition:
    (1 / alpha) int_0^alpha VaR_u du, each sorted value weighing its mass's share of [0, alpha]."""
    p, model, X = small_model("branin-1-1-discrete", 8, 0)
    w = WSet(p.z.points[::10], torch.softmax(-((p.z.points[::10, 0] - 0.5) ** 2) / 0.02, 0))
    m, M, alpha = w.points.shape[0], 4096, 0.3
    eps_now = draw_sobol_normal_samples(m, M, dtype=torch.float64, seed=3)
    est = FastRhoKG(model, w, alpha, X, eps_now, eps_now.reshape(1, M, m), measure=weighted_cvar)
    x = torch.tensor([[0.2], [0.7]], dtype=torch.float64)
    fast = est.estimate_now(x).numpy()
    rng = np.random.default_rng(0)
    masses = w.weights.numpy()
    for i in range(2):
        A = torch.cat([x[i].expand(m, 1), w.points], -1)
        with torch.no_grad():
            post = model.posterior(A)
            mean = post.mean.squeeze(-1).numpy()
            cov = post.mvn.covariance_matrix.numpy()
        draws = rng.multivariate_normal(mean, cov + 1e-10 * np.eye(m), size=100_000, method="eigh")
        order = np.argsort(draws, axis=-1)
        upper = np.minimum(np.cumsum(masses[order], axis=-1), alpha)
        share = np.diff(upper, axis=-1, prepend=0.0)
        cvar = (np.take_along_axis(draws, order, -1) * share).sum(-1) / alpha
        standard_error = cvar.std() / math.sqrt(M)
        assert abs(fast[i] - cvar.mean()) < 4 * standard_error + 1e-3, (fast[i], cvar.mean())


@pytest.mark.parametrize("measure", [weighted_cvar, borisk_cvar_equal, borisk_cvar_weighted])
def test_fast_cvar_value_equals_the_straightforward_one(measure) -> None:
    p, model, X = small_model("hartmann-1-2-discrete", 12, 1)
    w = WSet(p.z.points, p.z.masses)
    K, M, m = 5, 6, w.points.shape[0]
    eps_now, xi, eps = base_samples(K, M, m, 13)
    est = FastRhoKG(model, w, 0.1, X, eps_now, eps, measure=measure)
    best = float(est.now_past.max())
    g = torch.Generator().manual_seed(4)
    candidates = torch.rand(4, 3, generator=g, dtype=torch.float64)
    candidates[:, 1:] = p.z.points[torch.randint(p.z.size, (4,), generator=g)]
    fast = RhoKGAcquisition(model, est, xi, eps, best, tts_frequency=1)(candidates.unsqueeze(-2))
    slow = [reference_value(model, c, w, 0.1, X, xi, eps, best, measure=measure) for c in candidates]
    np.testing.assert_allclose(fast.detach().numpy(), slow, rtol=0, atol=1e-7)


def borisk_loop(f: np.ndarray, weights: np.ndarray, alpha: float) -> float:
    """BoRisk's ``InnerRho.forward`` with weights and ``CVaR=True``, ported line by line to numpy on
    one sample: it minimizes g = -f at level alpha_B = 1 - alpha, sorts g ascending, accumulates the
    weights in a loop, keeps the points whose cumulative weight is >= alpha_B and divides by their
    weight; the result, negated back."""
    g = -f
    order = np.argsort(g, kind="stable")
    g, w = g[order], weights[order]
    summed = np.zeros_like(w)
    summed[0] = w[0]
    for i in range(1, len(w)):
        summed[i] = summed[i - 1] + w[i]
    keep = summed >= 1 - alpha
    return -float((g * w * keep).sum() / (w * keep).sum())


def test_borisk_cvar_formulas_against_their_ports() -> None:
    rng = np.random.default_rng(0)
    for n, alpha in ((64, 0.1), (100, 0.1), (12, 0.3), (27, 0.1), (40, 0.25)):
        f = rng.normal(size=(5, n))
        masses = rng.dirichlet(np.ones(n))
        got = borisk_cvar_weighted(torch.tensor(f), torch.tensor(masses), alpha).numpy()
        for i in range(5):
            assert got[i] == pytest.approx(borisk_loop(f[i], masses, alpha), abs=1e-12)
        # without weights: the mean of the n - int(n alpha_B) smallest, BoRisk's slice of -f sorted
        equal = borisk_cvar_equal(torch.tensor(f), torch.tensor(masses), alpha).numpy()
        k = n - int(n * (1 - alpha))
        np.testing.assert_allclose(equal, np.sort(f, -1)[:, :k].mean(-1), atol=1e-12)
    # the departures from CVaR_alpha the docstrings name: 64 points at 0.1 take 7 values equally
    f = torch.arange(64, dtype=torch.float64)
    uniform = torch.full((64,), 1 / 64, dtype=torch.float64)
    assert float(borisk_cvar_equal(f, uniform, 0.1)) == pytest.approx(3.0)  # mean of 0..6
    assert float(weighted_cvar(f, uniform, 0.1)) == pytest.approx((15 / 64 + (0.1 - 6 / 64) * 6) / 0.1)


def test_rhokg_cvar_cells_run_exact_and_released() -> None:
    """A short CVaR cell of each variant: regret against the CVaR optimum from the cell's true CVaR;
    the two variants' acquisitions differ (their queries part after the first)."""
    options = {"restarts_per_dim": 1, "raw_per_restart": 8, "maxiter": 25}
    rows = {}
    for name in ("rhokg-apx", "rhokg-apx-released"):
        spec = CellSpec.make("hartmann-1-2-discrete", name, seed=0, iterations=3, options=options,
                             risk="cvar")
        result = run_cell(spec)
        rows[name] = result.rows
        problem = build_problem("hartmann-1-2-discrete")
        for row in result.rows:
            assert row["target"] == "cvar"
            truth = float(problem.cvar(torch.tensor([row["x_rec"]], dtype=torch.float64))[0])
            assert row["cvar_rec"] == pytest.approx(truth, abs=1e-12)
            assert row["regret"] == pytest.approx(problem.optimum.cvar - truth, abs=1e-12)
    assert [r["x"] for r in rows["rhokg-apx"]] != [r["x"] for r in rows["rhokg-apx-released"]]
