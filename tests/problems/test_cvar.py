"""Problem.cvar on a discrete Z: the lower-tail mean of f(x, .) over the support, from the
definition (values sorted, masses accumulated, each value weighing its mass inside [0, alpha])."""

import numpy as np
import pytest
import torch

from problems import PROBLEMS, build_problem

DISCRETE = [name for name in PROBLEMS if name.endswith("-discrete")]


@pytest.mark.parametrize("name", DISCRETE)
def test_discrete_cvar_is_the_tail_mean_over_the_support(name: str) -> None:
    p = build_problem(name, with_optimum=False)
    x = torch.rand(4, p.d_x, generator=torch.Generator().manual_seed(3))
    for alpha in (None, 0.05, 0.3):
        level = p.alpha if alpha is None else alpha
        got = p.cvar(x, alpha)
        for i in range(x.shape[0]):
            inputs = torch.cat([x[i].expand(p.z.points.shape[0], -1), p.z.points], dim=-1)
            values = p.f(inputs[:, :p.d_x], inputs[:, p.d_x:]).numpy()
            masses = p.z.masses.numpy()
            order = np.argsort(values, kind="stable")
            expected, left = 0.0, level
            for value, mass in zip(values[order], masses[order], strict=True):
                take = min(mass, left)
                expected += take * value
                left -= take
                if left <= 0:
                    break
            assert float(got[i]) == pytest.approx(expected / level, abs=1e-12)
        assert torch.all(got <= p.var(x, alpha) + 1e-12)
