"""The documentation's examples as tests: every ```python block of a page under docs/ runs under the
default ``pytest`` (pytest-markdown-docs), each in a fresh folder of its own, as a reader would run it
after ``pip install -e .``. A block marked ```python notest is shown only; ```python continuation runs
after the blocks before it on the page. A block whose info string names ``fixture:slow`` is a slow
test (deselected by default, run by ``pytest -m slow``).

The published reproduction's folder and the built site are not collected."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

collect_ignore_glob = ["_build/*", "reproduction/*", "_ext/*", "conf.py"]

_SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
if _SHARED_DATA.is_dir():  # as tests/conftest.py: the portfolio data without network
    os.environ.setdefault("VARBO_DATA_DIR", str(_SHARED_DATA))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """The pages' Python blocks (pytest-markdown-docs collects them itself under --markdown-docs)."""
    if file_path.suffix != ".md" or parent.config.option.markdowndocs:
        return None
    from pytest_markdown_docs.plugin import MarkdownTextFile

    return MarkdownTextFile.from_parent(parent, path=file_path)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """``fixture:slow`` in a block's info string makes it a slow test."""
    for item in items:
        if "slow" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def slow() -> None:
    """Marks a block as slow (see :func:`pytest_collection_modifyitems`); provides nothing."""


@pytest.fixture(autouse=True)
def _in_a_fresh_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each example runs in an empty folder of its own (what it writes, results/ or state.pt, stays
    there), with that folder importable, as the folder a user runs from is."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
