"""What the command lines share (``harness.run``, its grid mode, ``harness.status``): exit codes,
one-line usage errors, the argument parser, ``--option`` and ``--out`` parsing, the writability
probe of a results folder."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from harness.kernels import NATIVE_FLAG, NATIVE_VARIABLE, host_record, other_vendor
from harness.results import Location, location, packs

EXIT_USAGE = 2
EXIT_CELL_FAILED = 1
#: A grid stopped because its results folder's disk is full or its quota used up (``ENOSPC``,
#: ``EDQUOT``): sysexits' EX_TEMPFAIL, a failure that the same command, run again later, overcomes.
EXIT_DISK_FULL = 75
#: The exit code of a command whose reader left the pipe early (``| head``), as SIGPIPE's would be.
EXIT_CLOSED_PIPE = 141


def exit_with(main: Callable[[], int]) -> NoReturn:
    """Run a command's ``main`` and exit with its code.

    A reader that leaves the pipe early (``python -m harness.status FOLDER | head``) ends the command quietly
    with :data:`EXIT_CLOSED_PIPE`, as SIGPIPE ends a Unix tool, instead of a ``BrokenPipeError`` traceback
    (SIGPIPE itself stays ignored, as Python sets it: a socket's closed peer must not kill a process).

    Args:
        main: the command's main function, which returns its exit code.

    Returns:
        Never; it exits the process (``SystemExit``) with ``main``'s code, or :data:`EXIT_CLOSED_PIPE`.
    """
    try:
        code = main()
        sys.stdout.flush()  # here, so that a reader that has left is caught below
    except BrokenPipeError:
        quiet_stdout()
        sys.exit(EXIT_CLOSED_PIPE)
    sys.exit(code)


def quiet_stdout() -> None:
    """Point stdout at the null device, so that the exit's own flush of what is buffered for a reader
    that has left raises nothing."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


class UsageError(Exception):
    """Bad user input: reported as one line, exit code 2."""


class Parser(argparse.ArgumentParser):
    """One-line errors, and no abbreviated options: ``--seed 3`` in a grid call would otherwise
    mean ``--seeds 3`` and silently run a 3-seed grid."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # one line, no usage dump
        raise UsageError(message)


def parse_option(text: str) -> tuple[str, object]:
    """One ``--option NAME=VALUE`` as a name and a value.

    Args:
        text: the argument, ``NAME=VALUE``.

    Returns:
        (name, value), the name stripped, the value read as JSON where it is JSON, else the text as given.

    Raises:
        UsageError: an argument without ``=``.
    """
    if "=" not in text:
        raise UsageError(f"--option expects NAME=VALUE, got {text!r}")
    name, raw = text.split("=", 1)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return name.strip(), value


def out_location(text: str | Path) -> Location:
    """``--out`` as a location (a local folder or a URI).

    Args:
        text: the argument.

    Returns:
        The location (:func:`harness.results.location`).

    Raises:
        UsageError: one line, for an empty argument or a location that is not one.
    """
    if not str(text).strip():  # '' would silently mean the current folder
        raise UsageError("--out must name a folder, got an empty string")
    try:
        return location(text)
    except ValueError as error:
        raise UsageError(f"--out {text}: {error}") from None


def check_writable(out: Location) -> None:
    """Create ``out`` if needed and prove a file can be written there (then remove it)."""
    if not isinstance(out, Path) or type(out).__module__ != "pathlib":  # a URI: probe with an upload
        try:
            if out.is_file():
                raise UsageError(f"--out {out} exists and is not a folder")
            probe = out / f".write-test-{os.getpid()}"
            probe.write_text("")
            probe.unlink()
        except UsageError:
            raise
        except Exception as error:  # credentials, bucket, network: whatever the store says, one line
            text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise UsageError(f"--out {out} is not writable: {text}") from None
        return
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a directory")
    if packs(out):  # its cells live in packs: a new file beside them would be a second copy
        raise UsageError(f"--out {out} is a packed folder (harness.packed): write elsewhere, or unpack "
                         f"it first: python -m harness.pack {out} --unpack")
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".write-test-"):
            pass
    except OSError as error:
        raise UsageError(f"--out {out} is not writable: {error.strerror or error}") from None


def add_kernels_argument(container: argparse._ActionsContainer) -> None:
    """``--native-kernels``: read by :func:`harness.kernels.pin_process` when the command starts,
    before numpy and torch load; declared here so that the parser accepts it and ``--help`` shows it."""
    container.add_argument(NATIVE_FLAG, action="store_true",
                           help=f"run on this host's native kernels (or set {NATIVE_VARIABLE}=1): "
                                "maybe faster, but rows that another host may not reproduce bit for "
                                "bit; by default the numerical libraries are pinned to one code path "
                                "on every Intel x86-64 host with AVX2, and the cells record which")


def kernels_line() -> str:
    """How this process's cells run, for a command's first lines.

    Returns:
        ``kernels pinned`` or ``kernels native``, torch's CPU capability and the CPU
        (:func:`harness.kernels.host_record`), with a warning on a CPU the pin does not cover
        (:func:`harness.kernels.pin_holds`).
    """
    record = host_record()
    line = f"kernels {record['kernels']} (torch {record['torch_cpu']}) on {record['cpu']}"
    vendor = other_vendor()
    if record["kernels"] == "pinned" and vendor:
        line += (f" (not an Intel CPU, {vendor}: MKL takes its own branch here, so these rows may "
                 "differ from an Intel host's)")
    return line
