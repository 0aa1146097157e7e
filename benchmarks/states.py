"""The model states the benchmarks time their proposals on: the harness's GP fitted on a random design
of a problem (run as scripts, the benchmarks import this module as a sibling)."""

from __future__ import annotations

import torch
from botorch.models import SingleTaskGP

from algorithms.gp import fit_gp
from problems import Problem, get_problem
from problems.seeding import generator


def fitted_state(name: str, n: int, label: str) -> tuple[Problem, SingleTaskGP]:
    """Problem ``name`` and the harness's GP fitted on ``n`` noisy observations at a random design
    (x uniform, z uniform on Z's support), drawn from the stream of (``label``, ``name``, ``n``)."""
    problem = get_problem(name)
    g = generator(label, name, n)
    X = torch.rand(n, problem.d_x, generator=g, dtype=torch.float64)
    Z = problem.z.sample_support(n, g)
    Y = problem.observe(X, Z, torch.randn(n, generator=g, dtype=torch.float64)).unsqueeze(-1)
    model, _ = fit_gp(torch.cat([X, Z], -1), Y, None, refit=True, generator=torch.Generator().manual_seed(0))
    return problem, model
