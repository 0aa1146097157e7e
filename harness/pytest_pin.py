"""A pytest plugin that pins the kernels before any other plugin loads numpy.

pyproject's ``addopts`` loads it with ``-p harness.pytest_pin``: pytest imports the modules that
``-p`` names before the plugins it finds by entry point, and one of those (pytest-randomly) imports
numpy, after which :func:`harness.kernels.pin_process` can no longer pin and the tests would run on
the native kernels, unlike the commands they start (``tests/conftest.py`` reports the mode). Each
xdist worker is a pytest process of its own and loads it the same way.
"""

from __future__ import annotations

import harness.kernels

#: the mode this process runs in, ``"pinned"`` or ``"native"`` (``tests/conftest.py`` reports it)
KERNELS = harness.kernels.pin_process()
