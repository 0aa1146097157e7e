"""Shared test settings: float64 everywhere, one torch thread (as in the grid)."""

import torch

torch.set_default_dtype(torch.float64)
torch.set_num_threads(1)
