"""The site's lists that the code defines, generated at build time so that they cannot drift:

* ``{varbo-problems}``: the registered problems (``problems.PROBLEMS``);
* ``{varbo-problem-sources}``: one section per module that defines registered problems (the factory's
  module), headed by the problems' names, with the module's docstring (its source and how it maps
  onto this project's conventions) rendered as reStructuredText; the problems the registry module
  defines itself (the synthetic ones) are left to the page's own text;
* ``{varbo-algorithms}``: the registered algorithms, the kinds of Z and risk measures each handles;
* ``{varbo-algorithm-sections}``: one section per registered algorithm, in the registry's order: the
  label ``options-NAME``, a heading ``NAME``, the first paragraph of its module's docstring and its
  options table;
* ``{varbo-algorithm-options} NAME``: one algorithm's options, the values they take, defaults and
  meanings, as ``python -m harness.run --describe NAME`` reads them (``algorithms.describe_options``:
  the algorithm's declaration, ``algorithms.options``);
* ``{varbo-grids}``: the named grids with their sizes and descriptions (``harness.grid.named_grids()``);
* ``{varbo-grid-keys}``: the keys a grid file accepts, at the top and in a ``[[cells]]`` block;
* ``{varbo-columns}``: the columns of a cell's rows (``harness.schema.ROW_SCHEMA``) with their types.

Each renders the Markdown of ``varbo_generated.py`` (MyST parses it; the two section directives
build their sections as nodes and parse their contents), so that a problem or an algorithm lands as
its module, its tests and its registry entry, and its documentation follows. A module that defines
registered problems without a docstring is a warning (an error under ``-W``). The extension also
writes the small offline intersphinx inventories that ``conf.py`` falls back to, and rewrites the
links of the included reproduction page that point outside the site.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from varbo_generated import GENERATORS, SECTION_GENERATORS, options_table, undocumented_modules

logger = logging.getLogger(__name__)

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


class Generated(SphinxDirective):
    """A table generated from the code (the directive's name says which)."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        return self.parse_text_to_nodes(GENERATORS[self.name]())


class GeneratedSections(SphinxDirective):
    """Sections generated from the code (the directive's name says which), as children of the section
    the directive stands in. Built as nodes rather than parsed from Markdown headings: MyST appends a
    nested parse's sections to the page's section itself, and leaves a label before the first heading
    behind them, where it would mark the page's next section."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        """The sections, each with its labels as ids (the first its HTML id; the heading's slug too,
        as MyST gives a heading) and as explicit targets (``{ref}`` and ``#LABEL`` links)."""
        if self.name == "varbo-problem-sources":
            for module in undocumented_modules():
                logger.warning("%s defines registered problems but has no module docstring", module,
                               location=self.get_location())
        document = self.state.document
        out: list[nodes.Node] = []
        for entry in SECTION_GENERATORS[self.name]():
            title, messages = self.parse_inline(entry.title)
            slug = nodes.make_id(nodes.title("", "", *title).astext())
            ids = [*entry.labels, *([slug] if slug not in document.ids else [])]
            section = nodes.section("", nodes.title(entry.title, "", *title), ids=ids,
                                    names=list(entry.labels))
            section += messages
            section += self.parse_text_to_nodes(entry.body)
            document.note_explicit_target(section, section)
            out.append(section)
        return out


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
    for name in SECTION_GENERATORS:
        app.add_directive(name, GeneratedSections)
    app.add_directive("varbo-algorithm-options", AlgorithmOptions)
    app.connect("config-inited", lambda app, config: write_inventories(
        Path(app.confdir) / "_build" / "inventories"))
    app.connect("include-read", rewrite_reproduction)
    app.connect("doctree-read", drop_empty_usage)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
