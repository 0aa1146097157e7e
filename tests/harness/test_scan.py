"""Reading a results folder while a grid changes it: a folder that vanishes mid-scan is skipped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.results import visible_files


def _tree(out: Path) -> None:
    for name in ("a/b/one.parquet", "a/two.parquet", "a/b/note.json", "_checkpoints/c/x.parquet",
                 ".hidden/y.parquet", "a/.three.parquet", "gone/four.parquet"):
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(b"")


def test_visible_files_are_those_rglob_finds_outside_hidden_folders(tmp_path: Path) -> None:
    _tree(tmp_path)
    expected = sorted(p for p in tmp_path.rglob("*.parquet")
                      if not any(part.startswith((".", "_")) for part in p.relative_to(tmp_path).parts))
    assert sorted(visible_files(tmp_path, ".parquet")) == expected
    assert len(expected) == 3


def test_a_folder_removed_between_listing_and_reading_is_skipped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As a finished cell's checkpoint folder is removed by the driver while ``harness.status`` reads
    the results folder: the listing of ``out`` names ``gone``, which is removed before it is read."""
    _tree(tmp_path)
    real = os.scandir

    def scandir_then_remove(path):  # list ``out``, then remove ``gone`` as a running grid would
        entries = list(real(path))
        if Path(path) == tmp_path:
            (tmp_path / "gone" / "four.parquet").unlink()
            (tmp_path / "gone").rmdir()
        return _Listing(entries)

    monkeypatch.setattr(os, "scandir", scandir_then_remove)
    with pytest.raises(FileNotFoundError):  # what the scan used to do
        sorted(tmp_path.rglob("*.parquet"))
    _tree(tmp_path)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in visible_files(tmp_path, ".parquet")) \
        == ["a/b/one.parquet", "a/two.parquet"]


class _Listing:
    """An iterator over listed entries that is also a context manager, as ``os.scandir``'s is."""

    def __init__(self, entries: list) -> None:
        self._entries = iter(entries)

    def __iter__(self) -> _Listing:
        return self

    def __next__(self):
        return next(self._entries)

    def __enter__(self) -> _Listing:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def close(self) -> None:
        return None
