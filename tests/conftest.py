"""Shared test settings: the numerical libraries pinned as the commands pin them, float64
everywhere, one torch thread (as in the grid), and the portfolio data from the shared local copy (no
network here) unless VARBO_DATA_DIR says otherwise.

The tests run on every core (pytest-xdist, ``--dist loadgroup`` in pyproject.toml). The test modules
that start a local Ray, a moto server or grid drivers of their own, and time what those do, mark
themselves ``pytestmark = pytest.mark.xdist_group("processes")``: they run one after another on one
worker while the other workers take the rest (a module mark, not a hook here: xdist reads the groups
in a collection hook of its own, which runs before this file's would). A long test of such a module
that times nothing (it compares rows or files) adds a group of its own (``"untimed"``; xdist joins a
test's group names, so it becomes a unit apart) and may then share the cores with the timed ones:
keeping all of them in one group made that group's worker the slow step's bound while the other
worker idled.

A test that needs the portfolio data where there is none (no local copy, no cached copy, no
  network) is skipped with one reason, :data:`NO_PORTFOLIO_DATA`, whichever way it reached the data:
  the :class:`problems.portfolio_data.PortfolioDataError` it raised is turned into that skip. Where
  the data is there (CI has it), such an error is a failure as any other.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

import harness.kernels

#: The tests' own cells take the code path the commands take (harness.kernels), so that rows computed
#: in this process and in a ``harness.run`` it starts agree. The pin happens in the plugin
#: ``harness.pytest_pin`` (``-p`` in pyproject's addopts), which pytest loads before the plugins it
#: finds by entry point, one of which (pytest-randomly) imports numpy; here it only reads the mode
#: (run with ``-p no:harness.pytest_pin`` it pins here, as far as that is still possible). The
#: report's header says which.
KERNELS = harness.kernels.pin_process()

import torch  # noqa: E402

torch.set_default_dtype(torch.float64)
torch.set_num_threads(1)

_SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
if _SHARED_DATA.is_dir():
    os.environ.setdefault("VARBO_DATA_DIR", str(_SHARED_DATA))

#: The one reason every test that needs the portfolio data gives when it is not there.
NO_PORTFOLIO_DATA = "no copy of the portfolio data here (set VARBO_DATA_DIR; see problems/portfolio_data.py)"


@functools.cache
def portfolio_data_here() -> bool:
    """Whether the portfolio data can be had (a local or cached copy, or the download)."""
    from problems.portfolio_data import PortfolioDataError, locate

    try:
        locate()
    except PortfolioDataError:
        return False
    return True


def pytest_report_header() -> str:
    return f"varbo-bench kernels of this process: {KERNELS} (harness.kernels)"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A :class:`~problems.portfolio_data.PortfolioDataError` where the data is not here is a skip
    with :data:`NO_PORTFOLIO_DATA`, not a failure."""
    report = yield
    if call.excinfo is not None and report.failed:
        from problems.portfolio_data import PortfolioDataError

        if call.excinfo.errisinstance(PortfolioDataError) and not portfolio_data_here():
            report.outcome = "skipped"
            report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {NO_PORTFOLIO_DATA}")
    return report
