"""A clone without the portfolio data (no ``../shared/data``, no cached copy, no network): every test
that needs the data skips with the one reason of ``tests/conftest.py``, none fails."""

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import NO_PORTFOLIO_DATA

ROOT = Path(__file__).resolve().parents[1]


def test_every_test_that_needs_the_portfolio_data_skips_with_one_reason(tmp_path: Path) -> None:
    env = {**os.environ, "VARBO_DATA_DIR": str(tmp_path / "no-data"),
           "VARBO_CACHE_DIR": str(tmp_path / "cache")}
    # the stored optimum's test reaches the data through the problem (it once failed with
    # PortfolioDataError); the loader's tests through their own mark
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.plugins.offline", "-n0", "-q", "-rs",
         "-p", "no:randomly", "-p", "no:cacheprovider", "tests/problems/test_optima.py", "-k", "portfolio",
         "tests/problems/test_portfolio.py::test_problem_definition_and_objective"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    reasons = re.findall(r"^SKIPPED \[\d+\] \S+: (.*)$", done.stdout, flags=re.MULTILINE)
    summary = re.search(r"(\d+) skipped", done.stdout)
    last = done.stdout.splitlines()[-1]
    assert summary and int(summary.group(1)) >= 2 and "passed" not in last, done.stdout
    assert set(reasons) == {NO_PORTFOLIO_DATA}, done.stdout
