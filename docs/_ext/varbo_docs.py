"""The site's lists that the code defines, generated at build time so that they cannot drift:

* ``{varbo-problems}``: the registered problems (``problems.PROBLEMS``);
* ``{varbo-algorithms}``: the registered algorithms, the kinds of Z and risk measures each handles;
* ``{varbo-algorithm-options} NAME``: one algorithm's options, the values they take, defaults and
  meanings, as ``python -m harness.run --describe NAME`` reads them (``algorithms.describe_options``:
  the algorithm's declaration, ``algorithms.options``);
* ``{varbo-grids}``: the named grids with their sizes and descriptions (``harness.grid.named_grids()``);
* ``{varbo-grid-keys}``: the keys a grid file accepts, at the top and in a ``[[cells]]`` block;
* ``{varbo-columns}``: the columns of a cell's rows (``harness.results.ROW_SCHEMA``) with their types.

Each renders a Markdown table (MyST parses it). The extension also writes the small offline
intersphinx inventories that ``conf.py`` falls back to, and rewrites the links of the included
reproduction page that point outside the site.
"""

from __future__ import annotations

import inspect
import re
import zlib
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

#: The names the pages and docstrings link to in other projects, with their pages there: the
#: offline fallback of intersphinx (online, the projects' own inventories are used).
OFFLINE_INVENTORIES: dict[str, dict[str, tuple[str, str]]] = {
    "python": {"pathlib.Path": ("py:class", "library/pathlib.html#pathlib.Path")},
    "torch": {"torch.Tensor": ("py:class", "tensors.html#torch.Tensor")},
    "botorch": {
        "botorch.models.SingleTaskGP": (
            "py:class", "models.html#botorch.models.gp_regression.SingleTaskGP"),
        "botorch.acquisition.AcquisitionFunction": (
            "py:class", "acquisition.html#botorch.acquisition.acquisition.AcquisitionFunction"),
        "botorch.optim.optimize_acqf": ("py:function", "optim.html#botorch.optim.optimize.optimize_acqf"),
    },
    "ray": {"ray.remote": ("py:function", "ray-core/api/doc/ray.remote.html#ray.remote"),
            "ray.init": ("py:function", "ray-core/api/doc/ray.init.html#ray.init")},
    "pandas": {"pandas.DataFrame": ("py:class", "reference/api/pandas.DataFrame.html#pandas.DataFrame")},
    "numpy": {"numpy.ndarray": ("py:class", "reference/generated/numpy.ndarray.html#numpy.ndarray")},
}


def write_inventories(folder: Path) -> None:
    """Write one ``NAME.inv`` (Sphinx inventory version 2) per project of :data:`OFFLINE_INVENTORIES`."""
    folder.mkdir(parents=True, exist_ok=True)
    for project, names in OFFLINE_INVENTORIES.items():
        header = (f"# Sphinx inventory version 2\n# Project: {project}\n# Version: \n"
                  "# The remainder of this file is compressed using zlib.\n")
        body = "".join(f"{name} {role} 1 {uri} -\n" for name, (role, uri) in names.items())
        (folder / f"{project}.inv").write_bytes(header.encode() + zlib.compress(body.encode()))


def cell(value: object) -> str:
    """A value as the text of a Markdown table cell (``|`` escaped, one line)."""
    return " ".join(str(value).split()).replace("|", "\\|")


def table(header: list[str], rows: list[list[object]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def problems_table() -> str:
    """The registered problems: name, dimensions, Z, alpha, initial design, iterations, what it is."""
    from problems import PROBLEMS, build_problem

    rows = []
    for name in PROBLEMS:
        p = build_problem(name, with_optimum=False)
        z = f"{p.z.size} points" if p.z.is_discrete else "truncated normal"
        rows.append([f"`{name}`", p.d_x, p.d_z, z, p.alpha, p.n_init, p.iterations, p.description])
    return table(["name", "d_x", "d_z", "Z", "alpha", "n_init", "iterations", "what it is"], rows)


def _summary(factory: type) -> str:
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


def grids_table() -> str:
    """The named grids: name, cells, description."""
    from harness.grid import named_grids

    rows = []
    for name, factory in named_grids().items():
        grid = factory()
        rows.append([f"`{name}`", len(grid.cells), grid.description])
    return table(["grid", "cells", "what it runs"], rows)


def grid_keys_table() -> str:
    """The keys of a grid file, at the top and in a ``[[cells]]`` block, from the parser's own sets."""
    from harness.grid import _BLOCK_KEYS, _TOP_KEYS

    keys = sorted(_TOP_KEYS | _BLOCK_KEYS, key=lambda k: (k not in ("name", "problems", "algorithms"), k))
    rows = [[f"`{k}`", "yes" if k in _TOP_KEYS else "", "yes" if k in _BLOCK_KEYS else ""] for k in keys]
    return table(["key", "at the top", "in a [[cells]] block"], rows)


def columns_table() -> str:
    """The columns of a BO cell's rows, with their Arrow types, in the files' order."""
    from harness.results import ROW_SCHEMA

    return table(["column", "type"], [[f"`{f.name}`", f"`{f.type}`"] for f in ROW_SCHEMA])


GENERATORS = {
    "varbo-problems": problems_table,
    "varbo-algorithms": algorithms_table,
    "varbo-grids": grids_table,
    "varbo-grid-keys": grid_keys_table,
    "varbo-columns": columns_table,
}


class Generated(SphinxDirective):
    """A table generated from the code (the directive's name says which)."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        return self.parse_text_to_nodes(GENERATORS[self.name]())


class AlgorithmOptions(SphinxDirective):
    """``{varbo-algorithm-options} NAME``: one registered algorithm's options."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        return self.parse_text_to_nodes(options_table(self.arguments[0]))


#: Links of the included reproduction page (docs/reproduction/README.md, written by the publication
#: job) that point outside the site, and where they go on the site.
REPRODUCTION_LINKS = {
    "../../README.md#analysis": "explanation/claims.md",
}


def rewrite_reproduction(app: Sphinx, relative_path: Path, parent_docname: str, content: list[str]) -> None:
    """``include-read``: in the reproduction page, point the links to the project README at the site's
    pages, and the links to folders of the results (which a site cannot show) at plain text."""
    if relative_path.as_posix() != "reproduction/README.md":
        return
    text = content[0]
    for old, new in REPRODUCTION_LINKS.items():
        text = text.replace(f"]({old})", f"]({new})")
    # ../how-to/resume.md#..., ../explanation/claims.md: the site's pages, from the site's root
    text = re.sub(r"\]\(\.\./((?:explanation|how-to|reference|tutorials)/[^)]*)\)", r"](\1)", text)
    # [`paper/`](paper/), [`paper-extra/_report/`](paper-extra/_report/): code, not links
    text = re.sub(r"\[(`[^`\]]+`)\]\((paper(?:-extra)?/[^)]*)\)", r"\1", text)
    content[0] = text


def literal_paragraph(text: str) -> nodes.paragraph:
    """A paragraph of plain text whose parts between double backquotes (sphinx-argparse writes the
    defaults so) are code."""
    paragraph = nodes.paragraph()
    for i, part in enumerate(text.split("``")):
        if part:
            paragraph += nodes.literal(text=part) if i % 2 else nodes.Text(part)
    return paragraph


def plain_help() -> None:
    """Show the parsers' help texts as the plain text they are (written for a terminal): sphinx-argparse
    parses them as reStructuredText, where ``*?[`` in ``--only``'s help opens an emphasis."""
    import sphinxarg.ext

    rst_list = sphinxarg.ext.render_list

    def render_list(items: list, markdown_help: bool, settings: object = None) -> list[nodes.Node]:
        if markdown_help:
            return rst_list(items, markdown_help, settings)
        out: list[nodes.Node] = []
        for item in items:
            out += [literal_paragraph(item)] if isinstance(item, str) else list(item)
        return out

    sphinxarg.ext.render_list = render_list


def drop_empty_usage(app: Sphinx, doctree: nodes.document) -> None:
    """``doctree-read``: remove the empty usage block that sphinx-argparse draws for a parser whose
    usage is suppressed (the sections of ``harness.run --help``; the page shows the usage once)."""
    for block in list(doctree.findall(nodes.literal_block)):
        if not block.astext().strip():
            block.parent.remove(block)


def setup(app: Sphinx) -> dict[str, object]:
    """Register the directives and the hooks."""
    plain_help()
    for name in GENERATORS:
        app.add_directive(name, Generated)
    app.add_directive("varbo-algorithm-options", AlgorithmOptions)
    app.connect("config-inited", lambda app, config: write_inventories(
        Path(app.confdir) / "_build" / "inventories"))
    app.connect("include-read", rewrite_reproduction)
    app.connect("doctree-read", drop_empty_usage)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
