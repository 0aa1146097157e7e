"""How a report is written: the :class:`Document`, written once and rendered as Markdown and as
self-contained HTML side by side, and the report's CSV tables as written (:func:`csv_ready`)."""

from __future__ import annotations

import base64
import html
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.data import CELL_KEYS

#: Significant digits of the measured values in the report's CSV tables (full precision stays in
#: bands.parquet): the tables are read by people and compared at rtol 1e-9, and 17 digits made the
#: published bands.csv files a quarter larger, past the published folder's size budget.
CSV_DIGITS = 10


def _fmt(value: object) -> str:
    if isinstance(value, float | np.floating):
        if np.isnan(value):
            return ""
        if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
            return f"{value:.3e}"
        return f"{value:.4g}"
    return str(value)


def _slug(text: str) -> str:
    """A heading's anchor as GitHub renders Markdown ones: lower case, spaces to hyphens, only
    letters, digits, hyphens and underscores kept."""
    return "".join(c for c in text.lower().replace(" ", "-") if c.isalnum() or c in "-_")


class Document:
    """A report written once and rendered as Markdown and as self-contained HTML, with a table of
    contents of its second-level headings where :meth:`contents` is called."""

    def __init__(self, title: str) -> None:
        self.md: list[str] = [f"# {title}", ""]
        self.html: list[str] = [f"<h1>{html.escape(title)}</h1>"]
        self.title = title
        self.headings: list[tuple[int, str]] = []
        self._toc: tuple[int, int] | None = None  # where the contents go in md and html

    def contents(self) -> None:
        """The table of contents goes here (filled in by :meth:`write`)."""
        self._toc = (len(self.md), len(self.html))

    def heading(self, text: str, level: int = 2) -> None:
        self.headings.append((level, text))
        self.md += [f"{'#' * level} {text}", ""]
        self.html.append(f'<h{level} id="{_slug(text)}">{html.escape(text)}</h{level}>')

    def para(self, text: str) -> None:
        self.md += [text, ""]
        self.html.append(f"<p>{html.escape(text)}</p>")

    def bullets(self, items: list[str]) -> None:
        self.md += [f"- {item}" for item in items] + [""]
        self.html.append("<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>")

    def table(self, frame: pd.DataFrame, empty: str = "(none)") -> None:
        if frame.empty:
            self.para(empty)
            return
        cells = [[_fmt(v).replace("|", "\\|").replace("\n", " ") for v in row]
                 for row in frame.itertuples(index=False)]  # report-sized tables only
        header = [str(c) for c in frame.columns]
        self.md += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        self.md += ["| " + " | ".join(row) + " |" for row in cells] + [""]
        body = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(v))}</td>" for v in row) + "</tr>"
                       for row in frame.itertuples(index=False))
        head = "".join(f"<th>{html.escape(c)}</th>" for c in header)
        self.html.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")

    def figure(self, title: str, png: Path, pdf: Path) -> None:
        self.md += [f"![{title}]({png.name})", "", f"({pdf.name} for print)", ""]
        data = base64.b64encode(png.read_bytes()).decode()
        self.html.append(f'<figure><img alt="{html.escape(title)}" src="data:image/png;base64,{data}">'
                         f"<figcaption>{html.escape(title)}</figcaption></figure>")

    def write(self, out: Path) -> tuple[Path, Path]:
        """Write the report as ``report.md`` and ``report.html`` (self-contained) into ``out``.

        The table of contents, where :meth:`contents` placed it, lists the second-level headings.

        Args:
            out: the report folder.

        Returns:
            (the Markdown file's path, the HTML file's path).
        """
        md, body = list(self.md), list(self.html)
        if self._toc is not None:
            shown = [(level, text) for level, text in self.headings if level == 2]
            md[self._toc[0]:self._toc[0]] = (["**Contents**", ""]
                                             + [f"- [{t}](#{_slug(t)})" for _, t in shown] + [""])
            body.insert(self._toc[1], "<nav><b>Contents</b><ul>" + "".join(
                f'<li><a href="#{_slug(t)}">{html.escape(t)}</a></li>' for _, t in shown) + "</ul></nav>")
        md_path, html_path = out / "report.md", out / "report.html"
        md_path.write_text("\n".join(md))
        style = ("body{font-family:sans-serif;max-width:1200px;margin:auto;padding:1em}"
                 "table{border-collapse:collapse;font-size:12px;margin:0.5em 0}"
                 "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}"
                 "th{background:#eee}img{max-width:100%}nav{background:#f6f6f6;padding:0.3em 1em}"
                 "nav ul{margin:0.2em 0}")
        title = html.escape(self.title)
        html_path.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>"
                             f"<style>{style}</style></head><body>{''.join(body)}</body></html>")
        return md_path, html_path


def csv_ready(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with its float values rounded to :data:`CSV_DIGITS` significant digits, except the keys.

    The keys (:data:`analysis.data.CELL_KEYS`) are kept exact: an alpha -> 0 level such as 2.6e-17 must join
    back exactly.

    Args:
        table: the table to write as CSV.

    Returns:
        A copy of ``table``, its float columns other than the keys rounded.
    """
    out = table.copy()
    for column in out.columns:
        if column not in CELL_KEYS and pd.api.types.is_float_dtype(out[column]):
            out[column] = out[column].map(lambda v: float(f"{v:.{CSV_DIGITS}g}"))
    return out
