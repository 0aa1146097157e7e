"""Storage faults below the grid: a write reaches the disk before it is reported (file and folder
synced), a refused write is retried before a finished cell is given up, and a kept cell is written
back whole (harness.store, harness.spill). The grid-level paths are in test_grid_run.py."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from harness import spill, store


def test_a_write_syncs_its_data_then_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file's data is synced before the rename and the folder after it: without both, a crash
    soon after can leave an empty file or none where a finished cell was reported written."""
    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src, dst) -> None:
        events.append(("replace", str(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(store.os, "fsync", fsync)
    monkeypatch.setattr(store.os, "replace", replace)
    path = tmp_path / "cells" / "a.parquet"
    store.write_atomic(pa.table({"v": [1.0, 2.0]}), path)
    kinds = [(kind, Path(target).name) for kind, target in events]
    data = next(i for i, (k, name) in enumerate(kinds) if k == "fsync" and name.startswith(".a.parquet"))
    moved = kinds.index(("replace", "a.parquet"))
    folder = kinds.index(("fsync", "cells"))
    assert data < moved < folder


def test_a_refused_write_is_retried_with_pauses_then_given_up() -> None:
    pauses: list[float] = []
    attempts = {"n": 0}

    def flaky() -> str:
        attempts["n"] += 1
        if attempts["n"] < spill.WRITE_ATTEMPTS:
            raise OSError(28, "No space left on device")
        return "written"

    assert spill.write_with_retries(flaky, sleep=pauses.append) == "written"
    assert attempts["n"] == spill.WRITE_ATTEMPTS and pauses == list(spill.PAUSES_S)

    def refused() -> str:
        raise PermissionError(13, "Permission denied")

    pauses.clear()
    with pytest.raises(PermissionError):
        spill.write_with_retries(refused, sleep=pauses.append)
    assert len(pauses) == spill.WRITE_ATTEMPTS - 1  # no pause after the last attempt


def test_each_results_folder_has_its_own_keep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(spill.SPILL_VARIABLE, str(tmp_path))
    a, b = spill.spill_folder(tmp_path / "a"), spill.spill_folder(tmp_path / "b")
    assert a != b and a.parent == b.parent == tmp_path
    assert spill.recover(tmp_path / "a") == []  # nothing kept: nothing written
