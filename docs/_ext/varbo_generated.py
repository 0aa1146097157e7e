"""The Markdown that the site's generated lists render (``varbo_docs.py`` registers a directive for
each), from the code itself so that they cannot drift. Plain functions of the registries, importable
without Sphinx: the default tests call them (``tests/test_docs.py``).

A problem or an algorithm lands as its module, its tests and one registry entry; its part of the
site follows from them: its row in the tables, its section (a problem: its module's docstring; an
algorithm: its module's first paragraph and its options), its label (``problem-NAME``,
``options-NAME``).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass


def cell(value: object) -> str:
    """A value as the text of a Markdown table cell (``|`` escaped, one line)."""
    return " ".join(str(value).split()).replace("|", "\\|")


def table(header: list[str], rows: list[list[object]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def problems_table() -> str:
    """The registered problems: name (linked to its module's section where it has one), dimensions,
    Z, alpha, initial design, iterations, what it is."""
    from problems import PROBLEMS, build_problem

    documented = {name for names in problem_modules().values() for name in names}
    rows = []
    for name in PROBLEMS:
        p = build_problem(name, with_optimum=False)
        z = f"{p.z.size} points" if p.z.is_discrete else p.z.kind
        shown = f"[`{name}`](#problem-{name})" if name in documented else f"`{name}`"
        rows.append([shown, p.d_x, p.d_z, z, p.alpha, p.n_init, p.iterations, p.description])
    return table(["name", "d_x", "d_z", "Z", "alpha", "n_init", "iterations", "what it is"], rows)


def unwrapped(factory: Callable[..., object]) -> Callable[..., object]:
    """``factory`` with any ``functools.partial`` around it taken off: the function or class."""
    while isinstance(factory, functools.partial):
        factory = factory.func
    return factory


def factory_module(factory: Callable[..., object]) -> str:
    """The name of the module that defines ``factory``."""
    return unwrapped(factory).__module__


def problem_modules() -> dict[str, list[str]]:
    """The registered problems by the module of their factory, both in the registry's order; the
    registry module's own problems (the synthetic ones, which its docstring does not describe) left
    out."""
    from problems import PROBLEMS
    from problems.registry import __name__ as registry

    modules: dict[str, list[str]] = {}
    for name, factory in PROBLEMS.items():
        module = factory_module(factory)
        if module != registry:
            modules.setdefault(module, []).append(name)
    return modules


def fenced(info: str, text: str) -> str:
    """``text`` as a fenced block of MyST (``info`` its directive), the fence longer than any run of
    backquotes in ``text``."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


@dataclass(frozen=True)
class Section:
    """A generated section of a page (a heading one level below the directive's section)."""

    #: Its labels: ``{ref}`` targets and the page's anchors (``#LABEL``), the first its HTML id.
    labels: tuple[str, ...]
    #: Its heading, MyST Markdown inline.
    title: str
    #: Its content, MyST Markdown.
    body: str


def undocumented_modules() -> list[str]:
    """The modules of :func:`problem_modules` without a docstring (the build warns of each)."""
    return [module for module in problem_modules() if not inspect.getdoc(importlib.import_module(module))]


def problem_sources() -> list[Section]:
    """One section per module of :func:`problem_modules`: labelled ``problem-NAME`` for each of its
    problems, headed by their names, with the module's file and its docstring (reStructuredText, as
    the API pages parse it)."""
    sections = []
    for module, names in problem_modules().items():
        path = module.replace(".", "/") + ".py"
        doc = inspect.getdoc(importlib.import_module(module))
        body = (f"From the docstring of `{path}`:\n\n" + fenced("{eval-rst}", doc) if doc
                else f"`{path}` has no module docstring.")
        sections.append(Section(tuple(f"problem-{name}" for name in names),
                                ", ".join(f"`{name}`" for name in names), body))
    return sections


def _summary(factory: type) -> str:
    """The first paragraph of an algorithm's class docstring, as plain text."""
    from algorithms.describe import plain_text

    return plain_text((inspect.getdoc(factory) or "").split("\n\n", 1)[0])


def algorithms_table() -> str:
    """The registered algorithms: name, kinds of Z, risk measures, what it is."""
    from algorithms import ALGORITHMS
    from harness.catalog import _kinds, _risks

    rows = [[f"[`{name}`](#options-{name})", ", ".join(_kinds(f)), _risks(f), _summary(f)]
            for name, f in ALGORITHMS.items()]
    return table(["algorithm", "kinds of Z", "risk measures (--risk)", "what it is"], rows)


def options_table(name: str) -> str:
    """One algorithm's options, as it declares them (``algorithms.options``): name, the values it
    takes, default (as ``--option NAME=VALUE`` reads it), where it applies, meaning."""
    from algorithms import ALGORITHMS, describe_options
    from algorithms.describe import markdown_text
    from harness.catalog import format_default

    options = describe_options(ALGORITHMS[name])
    if not options:
        return "No options."
    rows = [[f"`{o.name}`", "any" if o.type is object else o.expects(), f"`{format_default(o.default)}`",
             f"{o.z_kind} Z only" if o.z_kind else "every Z", markdown_text(o.meaning) or "(undocumented)"]
            for o in options]
    return table(["option", "values", "default", "applies on", "meaning"], rows)


def algorithm_sections() -> list[Section]:
    """One section per registered algorithm, in the registry's order: labelled ``options-NAME`` (the
    anchor the algorithms table links to), headed ``NAME``, with the first paragraph of its module's
    docstring (where the method comes from), its class and file, and :func:`options_table`."""
    from algorithms import ALGORITHMS
    from algorithms.describe import markdown_text

    sections = []
    for name, factory in ALGORITHMS.items():
        module = factory_module(factory)
        doc = inspect.getdoc(importlib.import_module(module)) or ""
        qualname = getattr(unwrapped(factory), "__qualname__", name)
        origin = f"Class `{qualname}` in `{module.replace('.', '/')}.py`."
        summary = " ".join(markdown_text(doc.split("\n\n", 1)[0]).split())
        sections.append(Section((f"options-{name}",), f"`{name}`",
                                f"{summary} {origin}".strip() + "\n\n" + options_table(name)))
    return sections


def grids_table() -> str:
    """The named grids: name, cells, the dry run's estimate of their CPU-hours (the declared cost
    models, before any calibration from measured cells), description."""
    from harness.estimates import estimate_seconds
    from harness.grid import named_grids

    rows = []
    for name, factory in named_grids().items():
        grid = factory()
        hours = sum(estimate_seconds(spec) for spec in grid.cells) / 3600
        rows.append([f"`{name}`", len(grid.cells), f"{hours:.3g}", grid.description])
    return table(["grid", "cells", "estimated CPU-hours", "what it runs"], rows)


def grid_keys_table() -> str:
    """The keys of a grid file, at the top and in a ``[[cells]]`` block, from the parser's own sets."""
    from harness.grid import _BLOCK_KEYS, _TOP_KEYS

    keys = sorted(_TOP_KEYS | _BLOCK_KEYS, key=lambda k: (k not in ("name", "problems", "algorithms"), k))
    rows = [[f"`{k}`", "yes" if k in _TOP_KEYS else "", "yes" if k in _BLOCK_KEYS else ""] for k in keys]
    return table(["key", "at the top", "in a [[cells]] block"], rows)


def columns_table() -> str:
    """The columns of a BO cell's rows, with their Arrow types, in the files' order."""
    from harness.schema import ROW_SCHEMA

    return table(["column", "type"], [[f"`{f.name}`", f"`{f.type}`"] for f in ROW_SCHEMA])


#: The directives that render one table (or paragraph), and their generators.
GENERATORS: dict[str, Callable[[], str]] = {
    "varbo-problems": problems_table,
    "varbo-algorithms": algorithms_table,
    "varbo-grids": grids_table,
    "varbo-grid-keys": grid_keys_table,
    "varbo-columns": columns_table,
}


#: The directives that generate sections, and their generators.
SECTION_GENERATORS: dict[str, Callable[[], list[Section]]] = {
    "varbo-problem-sources": problem_sources,
    "varbo-algorithm-sections": algorithm_sections,
}
