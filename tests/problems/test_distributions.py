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
