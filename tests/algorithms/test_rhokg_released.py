"""rho-KG^apx's options that reproduce BoRisk's released code (acq_weights, refine, tts_reset) and the
algorithm ``rhokg-apx-released``, each checked against an independent computation or an identity
that must hold by construction."""

import numpy as np
import pytest
import torch

from algorithms import ALGORITHMS
from algorithms.rhokg import RhoKGApx, RhoKGApxReleased, WSet
from algorithms.rhokg_reference import reference_value
from harness.cell import CellSpec, run_cell
from problems import build_problem
from tests.algorithms.test_rhokg import small_model

#: A search effort that keeps a proposal near a second (the estimator is unchanged).
SMALL = {"restarts_per_dim": 2, "raw_per_restart": 10, "maxiter": 50}


def test_uniform_acquisition_weights_ignore_the_masses_and_the_current_best_keeps_them() -> None:
    # the acquisition at random candidates against the straightforward BoTorch value computed with
    # equal weights on the support, minus the current best computed with the masses
    p, model, X = small_model("branin-1-1-discrete", 7, 2)
    algorithm = RhoKGApx(p, seed_root=5, acq_weights="uniform")
    t = 3
    acquisition = algorithm.acquisition_function(model, t)
    w = algorithm._w_set(t)
    _, xi, eps, _ = algorithm._base_samples(t, w.points.shape[0])
    est_mass = algorithm.estimator(model, X, t)  # the masses, as the recommendation uses them
    current_best = float(est_mass.now_past.max())
    uniform = WSet(w.points, torch.full((p.z.size,), 1.0 / p.z.size, dtype=torch.float64))
    g = torch.Generator().manual_seed(0)
    candidates = torch.cat([torch.rand(4, 1, generator=g, dtype=torch.float64),
                            p.z.points[torch.randint(p.z.size, (4,), generator=g)]], -1)
    got = acquisition(candidates).numpy()
    for c, value in zip(candidates, got, strict=True):
        want_uniform = reference_value(model, c, uniform, p.alpha, est_mass.past_x, xi, eps, current_best)
        want_mass = reference_value(model, c, w, p.alpha, est_mass.past_x, xi, eps, current_best)
        # to rounding, as the fast and straightforward values agree in test_rhokg.py
        assert value == pytest.approx(want_uniform, rel=0, abs=1e-7)
        assert abs(want_uniform - want_mass) > 1e-4  # the masses matter on this Z: the test can fail


def test_uniform_and_mass_weights_agree_where_the_masses_are_uniform() -> None:
    # a continuous Z gives its L samples equal weights: the option cannot change anything there
    p = build_problem("branin-1-1-continuous", with_optimum=False)
    _, model, _ = small_model("branin-1-1-continuous", 6, 1)
    proposals = [RhoKGApx(p, 11, acq_weights=w, **SMALL).propose(model, 2) for w in ("mass", "uniform")]
    assert torch.equal(proposals[0].x, proposals[1].x) and torch.equal(proposals[0].z, proposals[1].z)
    assert proposals[0].info == proposals[1].info


def _record_optimize(algorithm: RhoKGApx) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Wrap the instance's ``_optimize`` to record (starts, solutions, values) of every call."""
    calls = []
    inner = algorithm._optimize

    def recording(acq, starts, bounds, maxiter, fix_w):
        solutions, values = inner(acq, starts, bounds, maxiter, fix_w)
        calls.append((starts.clone(), solutions.clone(), values.clone()))
        return solutions, values

    algorithm._optimize = recording
    return calls


@pytest.mark.parametrize("refine", ["best", "worst"])
def test_refinement_starts_from_the_best_or_the_lowest_valued_tenth(refine: str) -> None:
    p, model, _ = small_model("hartmann-1-2-discrete", 12, 3)
    algorithm = RhoKGApx(p, 7, refine=refine, restarts_per_dim=4, raw_per_restart=5, maxiter=25)
    calls = _record_optimize(algorithm)
    algorithm.propose(model, 4)
    first, second = calls[:-1], calls[-1]
    solutions = torch.cat([s for _, s, _ in first]).numpy()
    values = torch.cat([v for _, _, v in first]).numpy()
    k = int(np.ceil(algorithm.num_restarts / 10))
    order = np.argsort(values)  # ascending: lowest first
    chosen = order[:k] if refine == "worst" else order[::-1][:k]
    assert len(values) == algorithm.num_restarts == 12 and k == 2
    assert np.array_equal(second[0].numpy(), solutions[chosen])
    if refine == "worst":
        assert second[0].shape[0] == k and np.all(values[chosen] <= np.sort(values)[k - 1])


def _count_resets(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    from algorithms.rhokg import RhoKGAcquisition

    counts = [0]
    original = RhoKGAcquisition.tts_reset

    def counting(self):
        counts[0] += 1
        original(self)

    monkeypatch.setattr(RhoKGAcquisition, "tts_reset", counting)
    return counts


@pytest.mark.parametrize("mode", ["batch", "iteration"])
def test_the_memory_is_reset_per_batch_or_only_at_each_phase(mode: str, monkeypatch) -> None:
    p, model, _ = small_model("branin-1-1-discrete", 6, 4)
    counts = _count_resets(monkeypatch)
    algorithm = RhoKGApx(p, 3, tts_reset=mode, restarts_per_dim=5, raw_per_restart=4, maxiter=25)
    calls = _record_optimize(algorithm)
    algorithm.propose(model, 2)
    batches = len(calls)  # 10 restarts in batches of 5, then one refinement
    assert batches == 3
    # two acquisitions are built (raw scoring, search), each reset once, and one reset starts each
    # phase; "batch" adds one before every batch's search and one before its fresh values
    expected = 4 + 2 * batches if mode == "batch" else 4
    assert counts[0] == expected


def test_without_a_memory_the_reset_rule_changes_nothing() -> None:
    # tts_frequency = 1 searches S at every call: carrying the memory over or resetting it, and
    # taking L-BFGS-B's last values or fresh ones, must give the very same proposal
    p, model, _ = small_model("hartmann-1-2-discrete", 11, 5)
    a = RhoKGApx(p, 9, tts_frequency=1, tts_reset="batch", **SMALL).propose(model, 3)
    b = RhoKGApx(p, 9, tts_frequency=1, tts_reset="iteration", **SMALL).propose(model, 3)
    assert torch.equal(a.x, b.x) and torch.equal(a.z, b.z)
    assert a.info["acq_value"] == pytest.approx(b.info["acq_value"], rel=1e-12)


def test_released_is_rhokg_apx_with_the_three_released_behaviours() -> None:
    assert ALGORITHMS["rhokg-apx-released"] is RhoKGApxReleased
    options = {**SMALL, "maxiter": 40}
    released = run_cell(CellSpec.make("hartmann-1-2-discrete", "rhokg-apx-released", 0, 2,
                                      options=options))
    by_options = run_cell(CellSpec.make("hartmann-1-2-discrete", "rhokg-apx", 0, 2, options={
        **options, "acq_weights": "uniform", "refine": "worst", "tts_reset": "iteration"}))
    default = run_cell(CellSpec.make("hartmann-1-2-discrete", "rhokg-apx", 0, 2, options=options))
    keys = ("x", "z", "y", "x_rec", "regret")
    assert [[r[k] for k in keys] for r in released.rows] == [[r[k] for k in keys] for r in by_options.rows]
    # the same random streams: the initial design and the first recommendation agree with rhokg-apx
    assert released.rows[0]["x_rec"] == default.rows[0]["x_rec"]


@pytest.mark.parametrize("bad", [{"acq_weights": "masses"}, {"refine": "top"}, {"tts_reset": "never"}])
def test_bad_option_values_are_one_line_errors(bad: dict) -> None:
    p = build_problem("branin-1-1-discrete", with_optimum=False)
    with pytest.raises(ValueError, match=next(iter(bad))):
        RhoKGApx(p, 0, **bad)
    with pytest.raises(ValueError, match=next(iter(bad))):
        RhoKGApxReleased(p, 0, **bad)
