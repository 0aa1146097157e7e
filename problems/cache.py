"""Where the problems keep what is costly to recompute and never committed (data, search checkpoints)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def cache_dir(*parts: str) -> Path:
    """``$VARBO_CACHE_DIR/...`` if set, else the user cache directory (``~/.cache/varbo-bench/...``
    on Linux), created on demand."""
    root = os.environ.get("VARBO_CACHE_DIR") or platformdirs.user_cache_dir("varbo-bench")
    path = Path(root).joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path
