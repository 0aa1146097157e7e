"""The suite's page, "Which method to use when" (``docs/suite.md``, issue 40 item 4): hand-written
prose around blocks generated from the published suite (``docs/reproduction/suite``: its rows and
its report's tables) by :func:`analysis.pages.render`, as the paper's page is.

    python -m studies.suite.page            # rewrite the page's generated blocks
    python -m studies.suite.page --check    # exit 1 if a block differs from the published rows

Blocks: ``suite-provenance``, ``suite-verdicts`` (the claims S1-S5), ``suite-choice`` (which method
per kind of problem, risk measure and budget: :func:`analysis.across.choice_table`), ``suite-ranks``
(average ranks per problem: :func:`analysis.across.rank_tables`), ``suite-effort`` (what the reduced
effort changes: the report's ``effort.csv``), ``suite-sources`` (each problem's and method's source and
deviations, as the code declares them: :func:`analysis.sources.sources_table`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from analysis import pages
from analysis.across import choice_table, rank_tables
from analysis.claim_cells import study_cells
from analysis.report import read_frame
from analysis.sources import sources_table
from analysis.subclaims import EQUIVALENCE_MARGIN
from problems.measures import RISK_MEASURES
from studies.suite.study import STUDY

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "reproduction" / "suite"
PAGE = ROOT / "docs" / "suite.md"
#: The kinds of problem the choice is made for: the size and kind of Z decides which methods apply
#: and what their acquisitions cost.
KINDS: dict[str, tuple[str, ...]] = {
    "discrete Z of 12-15 points": ("branin-williams-2-2", "hartmann6-5-1", "yacht-5-1"),
    "discrete Z of 100-243 points": ("portfolio-3-2", "hartmann6-1-5"),
    "continuous Z": ("marzat-f6-4-3", "newsvendor-1-2"),
}
#: The budgets: a quarter of each problem's iterations, and all of them.
BUDGETS = {0.25: "a quarter", 1.0: "all"}


def verdict_block(overall: pd.DataFrame) -> str:
    """One row per claim: its statement, its verdict by each statistic and its sub-claims."""
    return pages.verdict_block(overall)


def choice_block(choices: pd.DataFrame) -> str:
    """One row per kind of problem, measure and budget: the method of best average rank, its median
    seconds per iteration, the methods no test separates from it, and the blocks ranked."""
    rows = []
    for (group, target), part in choices.groupby(["group", "target"], sort=False):
        label = RISK_MEASURES[target].label if target in RISK_MEASURES else target
        for _, row in part.sort_values("fraction").iterrows():
            rows.append({"problems": group, "measure": label,
                         "budget": BUDGETS.get(row["fraction"], f"{row['fraction']:g} of it"),
                         "use": f"**{row['best']}**", "s/it": f"{row['best_seconds']:.2g}",
                         "no test separates it from": row["tied"] or "none", "blocks": int(row["n_blocks"])})
    return pages.md_table(pd.DataFrame(rows))


def ranks_block(ranks: pd.DataFrame, friedman: pd.DataFrame) -> str:
    """Per risk measure, a table: one row per problem, then the row over all its problems, with each
    method's average rank over the seeds (1 is best; the best of the row in bold) and the blocks
    ranked; Friedman's p over all the measure's blocks goes in the table's title (the test ran once
    per measure, not per problem). One table per measure: each has its own methods (V-UCB optimizes
    VaR only, CV-UCB and CV-TS CVaR only)."""
    if ranks.empty:
        return "No two methods ran on every problem of a risk measure."
    tables = []
    for target, part in ranks.groupby("target", sort=True):
        wide = part.pivot_table(index="problem", columns="algorithm", values="mean_rank", sort=True)
        blocks_of = part.groupby("problem")["n_blocks"].first()
        rows = []
        for problem in [q for q in wide.index if q != "all"] + ["all"]:
            values, best = wide.loc[problem], wide.loc[problem].min()
            rows.append({"problem": "all problems" if problem == "all" else problem,
                         **{m: f"**{v:.2f}**" if v == best else f"{v:.2f}" for m, v in values.items()},
                         "blocks": int(blocks_of[problem])})
        label = RISK_MEASURES[target].label if target in RISK_MEASURES else target
        p = friedman.set_index("target")["p"].get(target, float("nan"))
        test = (f" (Friedman's test over the {int(blocks_of['all'])} blocks: p = {p:.2g})" if p == p
                else " (no Friedman test)")
        tables.append(f"**{label}**{test}\n\n{pages.md_table(pd.DataFrame(rows))}")
    return "\n\n".join(tables)


#: The effort table's columns as the page names them (``analysis.effort.effort_table``).
EFFORT_COLUMNS = {"problem": "problem", "algorithm": "method", "n_seeds": "paired seeds",
                  "median_d": "median of full - reduced (log10 regret)",
                  "p_difference": "p, any difference",
                  "p_equivalent": f"p, equivalent within +-{EQUIVALENCE_MARGIN} log10",
                  "time_ratio": "time per iteration, full / reduced", "note": "note"}


def effort_block(effort: pd.DataFrame) -> str:
    """What the reduced effort changes, per problem and method (the report's ``effort.csv``)."""
    if effort.empty:
        return "No cell ran at both efforts."
    table = effort[list(EFFORT_COLUMNS)].rename(columns=EFFORT_COLUMNS)
    return pages.md_table(table.astype(object).fillna(""))  # a blank note, not NaN; object: pandas 4


def blocks(results: Path) -> dict[str, str]:
    """Every generated block of the page from the published folder ``results``."""
    report = results / "_report"
    overall = pd.read_csv(report / "claims_overall.csv")
    frame, _, _ = read_frame(results)
    choices = choice_table(frame, KINDS, tuple(BUDGETS), STUDY)
    effort = pd.read_csv(report / "effort.csv") if (report / "effort.csv").is_file() else pd.DataFrame()
    ranks, friedman, _ = rank_tables(study_cells(frame, STUDY))
    return {"suite-provenance": pages.provenance_block(results, "suite/constraints.txt"),
            "suite-verdicts": verdict_block(overall.loc[overall["claim"].str.startswith("S")]),
            "suite-choice": choice_block(choices),
            "suite-ranks": ranks_block(ranks, friedman),
            "suite-effort": effort_block(effort),
            "suite-sources": sources_table(STUDY)}


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m studies.suite.page``."""
    parser = argparse.ArgumentParser(prog="python -m studies.suite.page", description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=RESULTS, help="the published suite folder")
    parser.add_argument("--page", type=Path, default=PAGE, help="the page to rewrite")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a block differs")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for path, what in ((args.results / "_report" / "claims_overall.csv", "a published suite with its report"),
                       (args.page, "the page")):
        if not path.is_file():
            print(f"studies.suite.page: error: no {path}: {what} is needed", file=sys.stderr)
            return 2
    text = args.page.read_text()
    rendered = pages.render(text, blocks(args.results.resolve()))
    if rendered == text:
        return 0
    if args.check:
        print(f"{args.page}: generated blocks differ from {args.results}; run python -m studies.suite.page",
              file=sys.stderr)
        return 1
    args.page.write_text(rendered)
    return 0


if __name__ == "__main__":
    sys.exit(main())
