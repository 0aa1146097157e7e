"""What ``python -m harness.run --list`` and ``--describe ALGORITHM`` print about the algorithms:
their kinds of Z and their options, with defaults and meanings read from the code
(:func:`algorithms.describe_options`). Plain text; nothing here imports Ray or runs anything."""

from __future__ import annotations

import inspect
import shutil
import textwrap

from algorithms import ALGORITHMS, algorithm_factory, describe_options
from algorithms.describe import plain_text
from algorithms.options import Option, format_value
from harness.cli import UsageError
from problems.measures import DEFAULT_RISK, RISK_MEASURES, RISKS

KINDS = ("discrete", "continuous")


def width() -> int:
    """The terminal's width, at least 60.

    Returns:
        The number of columns, 100 when not a terminal.
    """
    return max(60, shutil.get_terminal_size((100, 24)).columns)


def format_default(value: object) -> str:
    """A default as ``--option NAME=VALUE`` reads it.

    Args:
        value: the option's default (:data:`algorithms.options.REQUIRED` for none).

    Returns:
        The default as JSON (``"text"``, ``null``, ``0.1``; its ``repr`` where it is not JSON), or
        ``(required)``.
    """
    return format_value(value)


def _wrap(text: str, first: str, indent: int, columns: int) -> list[str]:
    return textwrap.wrap(text, columns, initial_indent=first, subsequent_indent=" " * indent,
                         break_long_words=False, break_on_hyphens=False) or [first.rstrip()]


def _kinds(factory: type) -> list[str]:
    return [k for k in KINDS if k in factory.z_kinds]


def option_summary(options: list[Option], kinds: list[str]) -> str:
    """The option names, those of one kind of Z only marked as such.

    Args:
        options: the algorithm's options (:func:`algorithms.describe.describe_options`).
        kinds: the kinds of Z the algorithm handles.

    Returns:
        The names comma-separated, e.g. ``beta; on a discrete Z: n_raw, ...`` (the kind named only where the
        algorithm handles several), or ``no options``.
    """
    common = [o.name for o in options if o.z_kind is None]
    parts = [", ".join(common)] if common else []
    for kind in kinds:
        only = [o.name for o in options if o.z_kind == kind]
        if only and len(kinds) > 1:
            parts.append(f"on a {kind} Z: {', '.join(only)}")
        elif only:
            parts.append(", ".join(only))
    return "; ".join(parts) or "no options"


def algorithm_lines(columns: int | None = None) -> list[str]:
    """The ``--list`` section of the registered algorithms: name, kinds of Z, risk measures, options.

    Args:
        columns: the width the lines are wrapped to (default: :func:`width`).

    Returns:
        The section's lines, a heading line first, then one entry per algorithm in the registry's order, its
        options wrapped under their column.
    """
    columns = columns or width()
    lines = ["algorithms (--algorithm NAME; the kinds of Z and risk measures (--risk) each handles; "
             "--describe NAME: their options' defaults and meanings):"]
    name_width = max(len(k) for k in ALGORITHMS)
    kind_width = len(", ".join(KINDS))
    risk_width = max(len(_risks(factory)) for factory in ALGORITHMS.values())
    indent = 2 + name_width + 2 + kind_width + 2 + risk_width + 2
    for key, factory in ALGORITHMS.items():
        first = (f"  {key:{name_width}s}  {', '.join(_kinds(factory)):{kind_width}s}  "
                 f"{_risks(factory):{risk_width}s}  ")
        summary = option_summary(describe_options(factory), _kinds(factory))
        lines += _wrap(summary, first, indent, columns)
    return lines


def _risks(factory: type) -> str:
    """The risk measures an algorithm optimizes, in the registry's order (VaR first)."""
    return ", ".join(r for r in RISKS if r in getattr(factory, "risks", frozenset({DEFAULT_RISK})))


def _summary_line(factory: type) -> str:
    """The first paragraph of the class docstring, on one line."""
    doc = inspect.getdoc(factory) or ""
    return plain_text(doc.split("\n\n", 1)[0])


def _table(options: list[Option], columns: int, aligned: list[Option]) -> list[str]:
    """One line or more per option: name, default, meaning and the values it takes (where declared),
    in columns as wide as ``aligned``'s."""
    name_width = max(len(o.name) for o in aligned)
    default_width = max(len(format_default(o.default)) for o in aligned)
    indent = 2 + name_width + 2 + default_width + 2
    lines = []
    for option in options:
        first = f"  {option.name:{name_width}s}  {format_default(option.default):{default_width}s}  "
        values = "" if option.type is object else f" Values: {option.expects()}."
        lines += _wrap((plain_text(option.meaning) or "(undocumented)") + values, first, indent, columns)
    return lines


def describe(name: str, columns: int | None = None) -> str:
    """The text of ``--describe NAME``.

    It names the algorithm, the kinds of Z it handles and each option with its default and meaning: those that
    apply on every kind of Z it handles, then those of one kind only, by kind.

    Args:
        name: the algorithm's registered name or import path.
        columns: the width the text is wrapped to (default: :func:`width`).

    Returns:
        The text, lines joined by newlines.

    Raises:
        UsageError: with the reason if ``name`` is not an algorithm.
    """
    columns = columns or width()
    try:
        factory = algorithm_factory(name)
    except KeyError as error:
        raise UsageError(error.args[0]) from None
    except ValueError as error:
        raise UsageError(str(error)) from None
    kinds = _kinds(factory)
    options = describe_options(factory)
    lines = _wrap(f"{name}: {_summary_line(factory)}", "", 2, columns)
    measures = " or ".join(RISK_MEASURES[r].label for r in _risks(factory).split(", "))
    target = (f"the optimal {measures} (--risk)" if factory.target is None
              else f"the optimal {factory.target.label} ({factory.target.name})")
    lines += _wrap(f"class {factory.__module__}.{factory.__qualname__}; handles a {' or a '.join(kinds)} "
                   f"Z; optimizes {measures}; regret against {target}.", "", 2, columns)
    lines += ["", *_wrap("Options: --option NAME=VALUE (one cell), options = { NAME = VALUE } (a grid "
                         "file); defaults as JSON.", "", 2, columns)]
    if not options:
        return "\n".join([*lines, "", "No options."])
    common = [o for o in options if o.z_kind is None or len(kinds) == 1]
    if common:
        lines += ["", f"On a {' or a '.join(kinds)} Z:", *_table(common, columns, options)]
    for kind in kinds if len(kinds) > 1 else []:
        only = [o for o in options if o.z_kind == kind]
        if only:
            lines += ["", f"On a {kind} Z only:", *_table(only, columns, options)]
    return "\n".join(lines)
