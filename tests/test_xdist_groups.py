"""The tests that start processes of their own share one xdist group (``--dist loadgroup``): this
checks that the installed pytest and pytest-xdist honour such a group at all (pytest 9.2 with
xdist 3.8 silently did not: pytest-dev/pytest-xdist#1386), on a small suite of its own."""

import re
import subprocess
import sys
from pathlib import Path

SUITE = '''
import pytest

@pytest.mark.xdist_group("processes")
@pytest.mark.parametrize("i", range(4))
def test_grouped(i):
    pass

@pytest.mark.parametrize("i", range(4))
def test_free(i):
    pass
'''


def test_a_group_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_suite.py").write_text(SUITE)
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v",
                           "-p", "no:randomly", "-p", "no:cacheprovider", "test_suite.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    workers = set(re.findall(r"^\[(gw\d+)\] .*PASSED .*test_grouped", done.stdout, flags=re.MULTILINE))
    assert len(re.findall(r"PASSED .*test_grouped", done.stdout)) == 4, done.stdout
    assert len(workers) == 1, f"the group ran on {sorted(workers)}:\n{done.stdout}"
