"""The standard synthetic test functions, on their native domains.

Branin and Hartmann come from BoTorch (``evaluate_true``: note that BoTorch's ``negate`` flag is not
applied by ``evaluate_true``, so these are the textbook, minimization-form values). BoTorch has no
Goldstein-Price, so it is written out here from its textbook formula.
"""

from __future__ import annotations

from botorch.test_functions.synthetic import Branin, Hartmann
from torch import Tensor

from problems.float64 import default_float64


def _in_float64(factory):
    """Build a BoTorch test function with float64 constants.

    BoTorch registers Hartmann's constants with ``torch.tensor(...)`` at the *default* dtype, and
    ``.to(float64)`` afterwards keeps their float32 rounding, which moves f by about 1e-9: enough to
    make a certified optimum depend on the default dtype at import time.
    """
    with default_float64():
        return factory()


_BRANIN = _in_float64(Branin)
_HARTMANN3 = _in_float64(lambda: Hartmann(dim=3))


def branin(X: Tensor) -> Tensor:
    """Branin-Hoo on [-5, 10] x [0, 15]; ``X`` is ``batch x 2``. Minimum 0.397887 at three points."""
    return _BRANIN.evaluate_true(X)


def goldstein_price(X: Tensor) -> Tensor:
    """Goldstein-Price on [-2, 2]^2; ``X`` is ``batch x 2``. Minimum 3 at (0, -1).

    GP(a, b) = [1 + (a + b + 1)^2 (19 - 14a + 3a^2 - 14b + 6ab + 3b^2)]
             * [30 + (2a - 3b)^2 (18 - 32a + 12a^2 + 48b - 36ab + 27b^2)]
    """
    a, b = X[..., 0], X[..., 1]
    first = 1 + (a + b + 1) ** 2 * (19 - 14 * a + 3 * a**2 - 14 * b + 6 * a * b + 3 * b**2)
    second = 30 + (2 * a - 3 * b) ** 2 * (
        18 - 32 * a + 12 * a**2 + 48 * b - 36 * a * b + 27 * b**2
    )
    return first * second


def hartmann3(X: Tensor) -> Tensor:
    """Hartmann-3 on [0, 1]^3 (negative-valued); ``X`` is ``batch x 3``. Minimum -3.86278."""
    return _HARTMANN3.evaluate_true(X)

