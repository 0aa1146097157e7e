"""How the results store's client talks to an object store: its retries and time limits.

A transient error of an object store (HTTP 500, 503 ``SlowDown``, a connection reset, a request that
hangs) is retried by the client library itself, not by a loop of this project: for S3, botocore's
retry modes, with the limits the user sets where botocore reads them. This module only chooses
defaults for what the user left unset (:func:`storage_options`, given to universal_pathlib by
:func:`harness.results.location`):

* the retry mode, ``standard`` (botocore's own default is ``legacy``: fewer errors retried and no
  retry quota), unless ``AWS_RETRY_MODE`` or the profile's ``retry_mode`` says otherwise;
* the attempts per request, :data:`MAX_ATTEMPTS` in all, unless ``AWS_MAX_ATTEMPTS`` or the
  profile's ``max_attempts`` says otherwise;
* the connect and read timeouts, :data:`CONNECT_TIMEOUT_S` and :data:`READ_TIMEOUT_S`, unless
  ``VARBO_S3_CONNECT_TIMEOUT_S`` or ``VARBO_S3_READ_TIMEOUT_S`` says otherwise (botocore reads no
  variable for them): a request that hangs is cut at the read timeout and retried.

fsspec's own configuration of ``s3`` (``FSSPEC_S3`` and its config files), where it sets
``config_kwargs``, wins key by key over all of these. Two layers of the libraries stay as they are:
s3fs repeats a request that timed out, lost its connection or met ``SlowDown`` up to 5 times (its
class setting ``retries``), each with botocore's attempts; and botocore's standard mode stops
retrying once its retry quota (per client) is spent, so that a store that is down fails fast.

What is left to this project is a store that stays down longer than the client's budget: the
finished cell is kept on this machine and written by the next run (:mod:`harness.spill`).
"""

from __future__ import annotations

import functools
import os
from pathlib import PurePath

#: The defaults for S3 (see the module's docstring).
RETRY_MODE = "standard"
MAX_ATTEMPTS = 10
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 20.0
#: The variables that set the timeouts, in seconds.
CONNECT_VARIABLE = "VARBO_S3_CONNECT_TIMEOUT_S"
READ_VARIABLE = "VARBO_S3_READ_TIMEOUT_S"
#: URI schemes served by s3fs, and those whose client retries a transient error by itself (gcsfs
#: retries its requests too, with its own backoff).
S3_SCHEMES = ("s3", "s3a")
SELF_RETRYING = (*S3_SCHEMES, "gs", "gcs")


def scheme(out: str | PurePath) -> str:
    """The URI scheme of ``out``.

    Args:
        out: a URI or a local path.

    Returns:
        The scheme in lower case (``s3``), or ``""`` for a local path.
    """
    text = str(out)
    return text.split("://", 1)[0].lower() if "://" in text else ""


def retries_itself(out: str | PurePath) -> bool:
    """Whether the client of ``out``'s store retries a transient error by itself (S3, GCS).

    A write it gave up on is then not worth retrying again here.

    Args:
        out: a URI or a local path.

    Returns:
        True for a scheme of :data:`SELF_RETRYING`.
    """
    return scheme(out) in SELF_RETRYING


def storage_options(out: str) -> dict:
    """The storage options of the store at URI ``out``.

    For S3 they are botocore's ``config_kwargs`` with the defaults of the module's docstring for what the user
    left unset; other stores get none.

    Args:
        out: the store's URI.

    Returns:
        ``{"config_kwargs": {...}}`` for S3 (timeouts, retries where unset, fsspec's own configuration over
        them), ``{}`` for another store.

    Raises:
        ValueError: a timeout variable that is not a positive number.
    """
    if scheme(out) not in S3_SCHEMES:
        return {}
    config: dict = {"connect_timeout": _seconds(CONNECT_VARIABLE, CONNECT_TIMEOUT_S),
                    "read_timeout": _seconds(READ_VARIABLE, READ_TIMEOUT_S)}
    # what is left out here botocore fills in itself, from the variable or the profile
    retries = {}
    if not _set_for_botocore("retry_mode", "AWS_RETRY_MODE"):
        retries["mode"] = RETRY_MODE
    if not _set_for_botocore("max_attempts", "AWS_MAX_ATTEMPTS"):
        retries["total_max_attempts"] = MAX_ATTEMPTS  # the first attempt counted, as AWS_MAX_ATTEMPTS
    if retries:
        config["retries"] = retries
    return {"config_kwargs": config | _fsspec_config_kwargs(scheme(out))}


def _seconds(variable: str, default: float) -> float:
    text = os.environ.get(variable, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise ValueError(f"{variable}={text!r} must be a positive number of seconds")
    return value


def _set_for_botocore(name: str, variable: str) -> bool:
    """Whether the user set botocore's ``name``: its variable, or the active profile's entry."""
    if os.environ.get(variable, "").strip():
        return True
    profile = os.environ.get("AWS_PROFILE") or os.environ.get("AWS_DEFAULT_PROFILE")
    return name in _profile_config(profile, os.environ.get("AWS_CONFIG_FILE"))


@functools.lru_cache(maxsize=8)
def _profile_config(profile: str | None, config_file: str | None) -> frozenset[str]:
    """The names set in the active profile of the AWS config file (read once per profile and file:
    ``location()`` runs often)."""
    try:
        import botocore.exceptions
        import botocore.session
    except ImportError:  # no S3 client installed: harness.results.location says what to install
        return frozenset()
    try:
        return frozenset(botocore.session.Session().get_scoped_config())
    except botocore.exceptions.BotoCoreError:  # a missing profile: the client will say so itself
        return frozenset()


def _fsspec_config_kwargs(protocol: str) -> dict:
    """``config_kwargs`` as fsspec's own configuration sets them for ``protocol``: they win, since
    fsspec gives a path's storage options precedence over its configuration."""
    try:
        import fsspec.config
    except ImportError:
        return {}
    configured = fsspec.config.conf.get(protocol, {}).get("config_kwargs")
    return dict(configured) if isinstance(configured, dict) else {}
