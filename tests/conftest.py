"""Shared test settings: float64 everywhere, one torch thread (as in the grid), and the portfolio
data from the shared local copy (no network here) unless VARBO_DATA_DIR says otherwise."""

import os
from pathlib import Path

import torch

torch.set_default_dtype(torch.float64)
torch.set_num_threads(1)

_SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
if _SHARED_DATA.is_dir():
    os.environ.setdefault("VARBO_DATA_DIR", str(_SHARED_DATA))
