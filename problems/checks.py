"""The checks of user-given numbers, one of each kind for the whole project: an integer option or
setting (:func:`positive_int`, also ``>= 0`` with ``allow_zero``) and a real one
(:func:`positive_float`). Each returns the value or raises a one-line ``ValueError`` that names its
owner and the setting, so that every command line and API says the same thing the same way."""

from __future__ import annotations

import math

__all__ = ["positive_float", "positive_int"]


def positive_int(owner: str, name: str, value: object, allow_zero: bool = False) -> int:
    """``value`` if it is an int >= 1 (>= 0 with ``allow_zero``; not a bool, not a float such as
    2.0), else a one-line ``ValueError``: ``"{owner}: {name} must be a positive integer, got ..."``
    (``owner`` may be empty)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if allow_zero else 1):
        kind = "an integer >= 0" if allow_zero else "a positive integer"
        raise ValueError(f"{owner + ': ' if owner else ''}{name} must be {kind}, got {value!r}")
    return value


def positive_float(owner: str, name: str, value: object, allow_zero: bool = False) -> float:
    """``value`` as a float if it is a finite number > 0 (>= 0 with ``allow_zero``; not a bool, a
    string or infinity), else a one-line ``ValueError`` naming ``owner`` and the option."""
    ok = (not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)
          and (value >= 0 if allow_zero else value > 0))
    if not ok:
        kind = "a finite number >= 0" if allow_zero else "a positive finite number"
        raise ValueError(f"{owner + ': ' if owner else ''}{name} must be {kind}, got {value!r}")
    return float(value)
