"""Ctrl-C (SIGINT) and SIGTERM as the harness's commands honour them, at every moment from the first
line to the end of shutdown: the command stops within seconds, says so in one line ("interrupted"),
never with a traceback, and exits with 130 after SIGINT and 143 after SIGTERM (128 + the signal, as
a shell reports a process ended by it).

Three modes, one per phase of a command's life:

* :func:`exit_at_once` while nothing is open (the imports at the start, the end after shutdown): the
  line, then ``os._exit``. An exception raised inside an extension's import (numpy's) can come out
  as an ImportError with a traceback, so the imports are never interrupted by one.
* :func:`install` while the command works: SIGINT raises :class:`KeyboardInterrupt`, SIGTERM
  :class:`Terminated` (a KeyboardInterrupt), so that one path handles both and
  :func:`exit_code` tells them apart.
* :class:`deferred` while something must not be cut half-way (``ray.init``, Ray's shutdown): a
  signal is recorded and acted on afterwards.

A command that was interrupted ends by :func:`exit_now` once all is closed, not ``sys.exit``: CPython
would otherwise end it by SIGINT where a KeyboardInterrupt passed through an extension's code.

Stdlib only: imported before the slow imports.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from typing import NoReturn

EXIT_SIGINT = 130
EXIT_SIGTERM = 143
SIGNALS = (signal.SIGINT, signal.SIGTERM)

#: Whether this process has printed its "interrupted" line (there is one, whatever arrives).
_reported = [False]
#: The signal :func:`install`'s handler last raised as an exception. Ray's waits turn any exception
#: of a signal handler into a plain KeyboardInterrupt: this tells which signal it was.
_raised: list[int | None] = [None]


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, a scheduler ending a job), raised where Ctrl-C raises KeyboardInterrupt."""


def exit_code(error: BaseException | int | None = None) -> int:
    """The exit code of an interruption.

    Args:
        error: the exception caught, or the signal's number.

    Returns:
        143 for :class:`Terminated` or SIGTERM (a KeyboardInterrupt raised for SIGTERM too), else 130.
    """
    if isinstance(error, Terminated) or error == signal.SIGTERM:
        return EXIT_SIGTERM
    if type(error) is KeyboardInterrupt and _raised[0] == signal.SIGTERM:
        return EXIT_SIGTERM
    return EXIT_SIGINT


def interruption(signum: int) -> KeyboardInterrupt:
    """The exception that stands for signal ``signum``.

    Args:
        signum: the signal's number.

    Returns:
        :class:`Terminated` for SIGTERM, else a :class:`KeyboardInterrupt`.
    """
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def report(text: str = "harness.run: interrupted", file=None) -> None:
    """Print the one "interrupted" line of this process (later calls print nothing)."""
    if not _reported[0]:
        _reported[0] = True
        print(text, file=file or sys.stderr, flush=True)


def reported() -> bool:
    """Whether this process has printed its "interrupted" line (:func:`report`).

    Returns:
        True once it has.
    """
    return _reported[0]


def exit_at_once(signum: int, frame: object = None) -> None:
    """A signal handler: the line (unless said already), then exit at once with 128 + ``signum``."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    with contextlib.suppress(Exception):
        report()
    exit_now(exit_code(signum))


def exit_now(code: int) -> NoReturn:
    """End the process with ``code`` now (``os._exit``), its stdout and stderr flushed: how a command exits
    after an interruption, once everything it opened is closed.

    ``sys.exit`` would not do: once a KeyboardInterrupt has been raised inside code that an extension runs
    through ``PyRun_*`` (an import can), CPython 3.11 ends the process by SIGINT at its exit, whatever
    code ``sys.exit`` gave and although the KeyboardInterrupt was caught (its flag for "the process ends by
    an unhandled KeyboardInterrupt" is not reset): a Ctrl-C during the imports came out as death by
    SIGINT instead of exit 130 (``tests/harness/test_interrupts.py`` raises it through
    ``ctypes.pythonapi.PyRun_SimpleString``).

    Args:
        code: the exit code.

    Returns:
        Never; the process ends with ``code``, its atexit handlers not run (all is closed by then).
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _raise(signum: int, frame: object) -> None:
    _raised[0] = signum
    raise interruption(signum)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def set_handlers(handler) -> None:
    """``handler`` for SIGINT and SIGTERM (only the main thread can set them: elsewhere, nothing)."""
    if _main_thread():
        for signum in SIGNALS:
            signal.signal(signum, handler)


def install() -> None:
    """SIGINT raises KeyboardInterrupt, SIGTERM :class:`Terminated`."""
    set_handlers(_raise)


class deferred:  # noqa: N801 (used as a context manager, like contextlib's)
    """Inside, SIGINT and SIGTERM are recorded (``.received``), not raised. On leaving, the handlers
    before are back and, with ``raise_after``, the first signal recorded is raised as its exception."""

    def __init__(self, raise_after: bool = True) -> None:
        self.raise_after = raise_after
        self.received: list[int] = []
        self.previous: dict[int, object] = {}

    def _record(self, signum: int, frame: object) -> None:
        self.received.append(signum)

    def __enter__(self) -> deferred:
        if _main_thread():
            self.previous = {signum: signal.getsignal(signum) for signum in SIGNALS}
            set_handlers(self._record)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
        if self.raise_after and self.received:
            raise interruption(self.received[0])
