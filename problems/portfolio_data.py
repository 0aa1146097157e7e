"""The 3,000 CVXPortfolio back-tests behind ``portfolio-3-2``: found, verified and parsed safely.

Where the file comes from, in this order:

1. a local copy, ``$VARBO_DATA_DIR/portfolio/data.pkl`` (how tests and offline machines run);
2. the user cache, ``<cache>/portfolio/data.pkl`` (:func:`problems.cache.cache_dir`);
3. the upstream file at its pinned commit (:data:`URL`), saved into the cache.

Every copy must have the pinned sha256 (:data:`SHA256`) before it is parsed, and parsing never
executes pickle code: :class:`_ArraysOnly` admits numpy's array reconstructor, ``ndarray`` and
``dtype`` and nothing else, and the result must be ``{"X": float32 3000 x 5, "Y": float32 3000 x 1}``.
Each failure raises :class:`PortfolioDataError` with a one-line message.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np

from problems.cache import cache_dir

URL = ("https://raw.githubusercontent.com/qphong/BayesOpt-LV/"
       "b852a94e9bae8716566e014ca1dd02186bcdf7ca/portfolio_data/data.pkl")
SHA256 = "2b4ba5f091de7d05ff9ae96ab2985eb0f868e3613e3846d1b52ebabde6e284fa"
FILE_NAME = "data.pkl"
DATA_DIR_ENV = "VARBO_DATA_DIR"
N_POINTS = 3000
DOWNLOAD_TIMEOUT_S = 30.0

#: numpy's array reconstructor, whatever module it lives in (numpy.core in 1.x, numpy._core in 2.x).
_RECONSTRUCT = np.zeros(1).__reduce__()[0]
#: The only callables a portfolio pickle may name: what numpy needs to rebuild an array.
_ALLOWED_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("numpy._core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
}


class PortfolioDataError(RuntimeError):
    """The portfolio data cannot be had: no copy, a wrong checksum, or not the expected file."""


class _ArraysOnly(pickle.Unpickler):
    """An unpickler that can build numpy arrays and nothing else.

    A pickle names every callable it calls through ``find_class``; refusing all but these three
    means no other code runs, whatever the file holds.
    """

    def find_class(self, module: str, name: str) -> object:
        try:
            return _ALLOWED_GLOBALS[module, name]
        except KeyError:
            raise pickle.UnpicklingError(f"refused to load {module}.{name}") from None


def parse(payload: bytes, source: str = "the file") -> tuple[np.ndarray, np.ndarray]:
    """X (``3000 x 5``) and Y (``3000 x 1``), float64, from the bytes of the upstream pickle.

    Does not check the sha256 (:func:`load` does, first); it refuses anything that is not a dict
    of two float32 arrays of the expected shapes, and any pickle that names other callables.
    """
    try:
        obj = _ArraysOnly(io.BytesIO(payload)).load()
    except Exception as error:  # any failure to parse means: not the file we want
        raise PortfolioDataError(f"{source} is not the portfolio pickle: {error}") from None
    if not isinstance(obj, dict) or set(obj) != {"X", "Y"}:
        raise PortfolioDataError(f"{source} is not the portfolio pickle: expected a dict with keys X, Y")
    X, Y = obj["X"], obj["Y"]
    for key, array, shape in (("X", X, (N_POINTS, 5)), ("Y", Y, (N_POINTS, 1))):
        if type(array) is not np.ndarray or array.dtype != np.float32 or array.shape != shape:
            raise PortfolioDataError(f"{source} is not the portfolio pickle: {key} should be a "
                                     f"float32 array of shape {shape}")
    if not (np.isfinite(X).all() and np.isfinite(Y).all() and X.min() >= 0.0 and X.max() <= 1.0):
        raise PortfolioDataError(f"{source} is not the portfolio pickle: values out of range")
    return X.astype(np.float64), Y.astype(np.float64)


def _verified(path: Path) -> bytes:
    payload = path.read_bytes()
    digest = hashlib.sha256(payload).hexdigest()
    if digest != SHA256:
        raise PortfolioDataError(f"{path} has sha256 {digest[:12]}..., expected {SHA256[:12]}... "
                                 f"(corrupted or a different file; delete it or fix {DATA_DIR_ENV})")
    return payload


def _download(target: Path) -> bytes:
    try:
        with urllib.request.urlopen(URL, timeout=DOWNLOAD_TIMEOUT_S) as response:
            payload = response.read()
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise PortfolioDataError(
            f"portfolio data: no local copy (set {DATA_DIR_ENV} to a folder holding "
            f"portfolio/{FILE_NAME}) and the download from {URL} failed: {reason}") from None
    digest = hashlib.sha256(payload).hexdigest()
    if digest != SHA256:
        raise PortfolioDataError(f"the download from {URL} has sha256 {digest[:12]}..., "
                                 f"expected {SHA256[:12]}...")
    tmp = target.with_name("." + target.name + ".part")
    tmp.write_bytes(payload)
    os.replace(tmp, target)
    return payload


def locate() -> tuple[bytes, str]:
    """The verified bytes of the upstream file and where they came from (a path or the URL)."""
    data_dir = os.environ.get(DATA_DIR_ENV)
    if data_dir:
        local = Path(data_dir) / "portfolio" / FILE_NAME
        if local.exists():
            return _verified(local), str(local)
    cached = cache_dir("portfolio") / FILE_NAME
    if cached.exists():
        return _verified(cached), str(cached)
    return _download(cached), URL


def load() -> tuple[np.ndarray, np.ndarray]:
    """The 3,000 back-tests: X (``3000 x 5``, [0, 1]-scaled (x1, x2, x3, w1, w2)) and Y (``3000 x 1``,
    the negated annualized excess return in percent), as float64."""
    payload, source = locate()
    return parse(payload, source)
