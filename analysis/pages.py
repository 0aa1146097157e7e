"""What every study's published page is made of: hand-written prose around generated blocks.

A generated block sits between ``<!-- generated: NAME -->`` and ``<!-- end generated: NAME -->``;
:func:`render` replaces its content and touches nothing else, so the numbers on a page cannot drift
from the published tables while the reading of them stays in words a person wrote. A study's page
module (``studies/<name>/page.py``) makes the blocks' contents from its published report."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pandas as pd

from harness.kernels import host_summary
from harness.results import read_metadata, result_files

BLOCK = re.compile(r"(<!-- generated: ([\w-]+) -->\n)(.*?)(<!-- end generated: \2 -->)", re.S)


def md_table(frame: pd.DataFrame) -> str:
    """``frame`` as a Markdown table.

    Every value is shown as text: a float to three significant digits, NaN as an empty cell, a ``|`` in a
    value escaped.

    Args:
        frame: the table; its index is not shown.

    Returns:
        The table's lines joined by newlines (no trailing one), a header row of the column names first.
    """
    def text(value: object) -> str:
        if isinstance(value, float):
            return "" if value != value else f"{value:.3g}"
        return str(value).replace("|", "\\|")

    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(text(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


#: How a page writes a verdict: the decided ones in bold.
VERDICT_MARK = {"reproduced": "**reproduced**", "not reproduced": "**not reproduced**",
                "inconclusive": "inconclusive", "not run": "not run"}


def verdict_block(overall: pd.DataFrame, statement: str = "statement") -> str:
    """The verdicts of a study's claims as a Markdown table.

    Args:
        overall: a report's ``claims_overall.csv`` (:func:`analysis.claims.overall`).
        statement: the column name the statements are shown under.

    Returns:
        A Markdown table (:func:`md_table`) with one row per claim of ``overall``, columns ``claim``, its
        statement, its verdict by each statistic (reproduced and not reproduced in bold) and its sub-claims.
    """
    return md_table(pd.DataFrame({
        "claim": overall["claim"], statement: overall["statement"],
        "final log10 regret": overall["verdict"].map(VERDICT_MARK),
        "mean of the last 10": overall["verdict_last10"].fillna("").map(lambda v: VERDICT_MARK.get(v, v)),
        "sub-claims (final)": overall["sub-claims"]}))


def provenance_block(results: Path, constraints: str) -> str:
    """Which commits, environments and hosts produced the cells, how many, and their CPU time.

    Args:
        results: the results folder whose cell files are read.
        constraints: where the published pins are (as the page names it).

    Returns:
        A Markdown list of six lines, on the cells (how many resumed, the hours inside them), their commits,
        environments and hosts (each with its count of cells), their kernels and CPUs, and the main packages
        of the first cell.
    """
    metas = [read_metadata(path) for path in result_files(results)]
    info = [m.get("provenance", {}) for m in metas]
    commits = Counter(i.get("git_commit") or "unknown" for i in info)
    environments = Counter(i.get("environment") or "unknown" for i in info)
    hosts = Counter(f"{i.get('host', '?')} ({i.get('platform', '?')})" for i in info)
    resumed = sum(1 for i in info if i.get("resumed_at") is not None)
    hours = sum(float(m.get("wall_time_s") or 0.0) for m in metas) / 3600
    packages = json.dumps(info[0].get("packages", {}), sort_keys=True) if info else "{}"

    def counted(counter: Counter) -> str:
        return ", ".join(f"`{k}` ({n})" for k, n in counter.most_common())

    return "\n".join([
        f"- cells: {len(metas)}, of which {resumed} resumed from a checkpoint; "
        f"{hours:.1f} hours inside the cells (wall-clock, one core each)",
        f"- commits (cells): {counted(commits)}",
        f"- environments (digest of every installed distribution, cells): {counted(environments)}; "
        f"the pins are `{constraints}`",
        f"- hosts (cells): {counted(hosts)}",
        f"- kernels and CPUs: {'; '.join(host_summary(info))}",
        f"- main packages: `{packages}`",
    ])


def render(page: str, contents: dict[str, str]) -> str:
    """``page`` with each generated block's content replaced.

    A block runs from ``<!-- generated: NAME -->`` to ``<!-- end generated: NAME -->``.

    Args:
        page: the page's Markdown.
        contents: block name -> its new content (a block not in ``contents`` is kept).

    Returns:
        The page, each replaced block's content ending in one newline.
    """
    def replace(match: re.Match) -> str:
        name = match.group(2)
        body = contents[name].rstrip("\n") + "\n" if name in contents else match.group(3)
        return match.group(1) + body + match.group(4)

    return BLOCK.sub(replace, page)
