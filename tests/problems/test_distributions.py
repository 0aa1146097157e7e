"""The recorded smallest masses of the synthetic problems' discrete Z, and the spec hashes they keep."""

from pathlib import Path

import mpmath
import pytest

from harness.grid import resolve_grid
from harness.results import read_manifest, spec_hash
from problems.distributions import GAUSSIAN_GRID_MIN_MASS, gaussian_grid

PUBLISHED = Path(__file__).resolve().parents[2] / "docs" / "reproduction"


@pytest.mark.parametrize("key", sorted(GAUSSIAN_GRID_MIN_MASS), ids=str)
def test_the_recorded_smallest_mass_is_the_definitions(key: tuple) -> None:
    """Against the definition computed again at 200 bits: exp(l_i) / sum_j exp(l_j) with l the
    float64 logits -||z - center||^2 / width^2 of the float64 support points."""
    n, d_z, center, width = key
    z = gaussian_grid(n, d_z, center, width)
    mpmath.mp.prec = 200
    logits = [-sum((mpmath.mpf(v) - mpmath.mpf(center)) ** 2 for v in point) / mpmath.mpf(width) ** 2
              for point in z.points.tolist()]
    top = max(logits)
    total = mpmath.fsum(mpmath.exp(l - top) for l in logits)
    exact = mpmath.exp(min(logits) - top) / total
    assert z.min_mass == GAUSSIAN_GRID_MIN_MASS[key]
    assert abs(z.min_mass - exact) / exact < 1e-13
    assert abs(float(z.masses.min()) - z.min_mass) <= 4 * 2.0**-52 * z.min_mass  # the tensor's, a few ulps


@pytest.mark.parametrize("name", ["paper", "paper-extra", "cvar"])
def test_the_published_grids_hashes_are_the_named_grids(name: str) -> None:
    """Every cell of a published grid's manifest is a cell of the named grid expanded here, with the
    same spec hash (the alpha -> 0 cells' alpha comes from the recorded smallest mass, not from
    this host's exp)."""
    _, published = read_manifest(PUBLISHED / name)
    here = {spec_hash(c) for c in resolve_grid(name).cells}
    missing = [c for c in published if spec_hash(c) not in here]
    assert not missing, f"{len(missing)} published cells not in the grid, e.g. {missing[0]}"


def test_a_uniform_z_is_uniform_on_its_box() -> None:
    """UniformZ(d, lower, upper): its quantile function is affine, its density the box's inverse
    volume (zero outside), its draws and QMC nodes inside the box with the uniform's moments, and
    the equal-mass grid the midpoints."""
    import torch

    from problems import UniformZ

    z = UniformZ(3, 0.2, 0.6)
    u = torch.rand(100, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert torch.allclose(z.icdf(u), 0.2 + 0.4 * u, atol=1e-15, rtol=0)
    inside, outside = torch.full((1, 3), 0.3, dtype=torch.float64), torch.tensor([[0.3, 0.7, 0.3]])
    assert float(z.density(inside)) == pytest.approx(1 / 0.4**3, rel=1e-14)
    assert float(z.density(outside.double())) == 0.0
    draws = z.sample(400_000, torch.Generator().manual_seed(1))
    assert float(draws.min()) >= 0.2 and float(draws.max()) <= 0.6
    assert draws.mean(0).numpy() == pytest.approx([0.4] * 3, abs=4 * 0.4 / 12**0.5 / 400_000**0.5)
    assert draws.var(0).numpy() == pytest.approx([0.4**2 / 12] * 3, rel=5e-3)
    nodes = z.qmc_points(2**14)
    assert nodes.mean(0).numpy() == pytest.approx([0.4] * 3, abs=1e-4)
    grid = UniformZ(1).equal_mass_grid(4)
    assert grid.points.squeeze(-1).tolist() == [0.125, 0.375, 0.625, 0.875]
    with pytest.raises(ValueError, match="lower < upper"):
        UniformZ(1, 0.5, 0.5)
