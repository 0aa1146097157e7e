"""The reproduction page, ``docs/reproduction/README.md``: hand-written prose around generated blocks.

A generated block sits between ``<!-- generated: NAME -->`` and ``<!-- end generated: NAME -->``; its
content is made here from the published report's tables (``claims.csv``, ``claims_overall.csv``,
``final_table.csv`` under ``RESULTS/_report/``), the cells' provenance and, for the ``sources`` block,
what the study's problems and methods declare of their sources (:func:`analysis.sources.sources_table`),
and nothing else on the page is touched. The project README's ``reproduction`` block (Figure 3 and
five lines) is made the same way. So the numbers on the page cannot drift from the published tables (a
test renders the page and compares), while the reading of them stays in words a person wrote.

    python -m studies.nguyen2021.page                 # rewrite the blocks of the page and README.md
    python -m studies.nguyen2021.page --check         # exit 1 if a block differs from its tables
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import pandas as pd

from analysis import pages
from analysis.pages import BLOCK, md_table, render  # noqa: F401 (BLOCK and render: this page's API)
from analysis.sources import sources_table
from analysis.summary import pivot_tables
from harness.results import result_files
from studies.nguyen2021.study import STUDY

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "reproduction" / "paper"
#: The paper-extra run (seeds 0-29 where 30 decide), published beside the paper run.
EXTRA = ROOT / "docs" / "reproduction" / "paper-extra"
PAGE = ROOT / "docs" / "reproduction" / "README.md"
#: The published run of the ``cvar`` grid, whose tables the CVaR how-to shows.
CVAR = ROOT / "docs" / "reproduction" / "cvar"
CVAR_PAGE = ROOT / "docs" / "how-to" / "cvar.md"
#: The cvar grid's problems in the how-to's order, with the names its prose uses.
CVAR_TITLES = {"branin-1-1-discrete": "Branin-(1,1) discrete",
               "goldstein-1-1-discrete": "Goldstein-(1,1) discrete",
               "hartmann-1-2-discrete": "Hartmann-(1,2) discrete",
               "hartmann-2-1-discrete": "Hartmann-(2,1) discrete",
               "branin-1-1-continuous": "Branin-(1,1) continuous"}
README = ROOT / "README.md"

#: The paper's figures: file stem, title, the paper's own statement about it (quoted), its claims.
FIGURES = [
    ("fig3_discrete", "Figure 3: synthetic problems, discrete Z",
     "When D_z is discrete (Fig. 3), V-UCB Unif is on par with ρKG^apx in optimizing Branin-Hoo-(1,1) "
     "and Goldstein-Price-(1,1), and outperforms ρKG^apx in optimizing Hartmann-(1,2) and "
     "Hartmann-(2,1). V-UCB Prob is also able to exploit the probability distribution of Z to "
     "outperform V-UCB Unif.", ("C1", "C2", "C3", "C9")),
    ("fig4_continuous", "Figure 4: synthetic problems, continuous Z",
     "When D_z is continuous (Fig. 4), V-UCB Prob outperforms ρKG^apx.", ("C4", "C9")),
    ("fig5_simulated", "Figure 5: portfolio optimization and robot pushing",
     "We observe that V-UCB outperforms ρKG^apx in both problems. Furthermore, in comparison to our "
     "synthetic experiments, the difference between V-UCB Unif and V-UCB Prob is not significant in "
     "the robot pushing experiment.", ("C5", "C6", "C9")),
    ("fig_alpha0", "alpha -> 0: V-UCB and StableOpt",
     "The StableOpt solution to adversarially robust BO selects the same input query as that selected "
     "by the V-UCB solution to the corresponding BO of VaR (Corollary 2, as alpha -> 0+).", ("C7",)),
    ("fig_timing", "Time per iteration",
     "The time complexity of V-UCB is dominated by that of the selection of x_t ... O(|D_z| |D_{t-1}|^2) "
     "for the GP prediction ... and O(|D_z| log |D_z|) for the sorting (Section 3.3); ρKG^apx is the "
     "costlier baseline.", ("C8",)),
]
VERDICT_MARK = pages.VERDICT_MARK


def provenance_block(results: Path) -> str:
    """Which commits, environments and hosts produced the cells (:func:`analysis.pages.provenance_block`)."""
    return pages.provenance_block(results, "paper/constraints.txt")


def verdict_block(overall: pd.DataFrame) -> str:
    """One row per claim: the statement, the verdict by each statistic, the sub-claim counts."""
    return pages.verdict_block(overall, "the paper says")


def figure_block(stem: str, title: str, statement: str, claims: tuple[str, ...],
                 overall: pd.DataFrame) -> str:
    """A figure with the paper's statement and the verdicts of its claims."""
    rows = overall.set_index("claim")
    verdicts = "; ".join(f"{c} {VERDICT_MARK[rows.loc[c, 'verdict']]} (final), "
                         f"{VERDICT_MARK.get(str(rows.loc[c, 'verdict_last10']), '-')} (last 10)"
                         for c in claims if c in rows.index)
    return "\n".join([f"### {title}", "", f"![{title}](paper/_report/{stem}.png)", "",
                      f"> {statement}", "", f"Verdicts: {verdicts}."])


def subclaim_block(claims: pd.DataFrame) -> str:
    """Every sub-claim of the default configuration, by both statistics."""
    rows = claims.loc[claims["variant"] == "default"]
    keep = [c for c in ("claim", "problem", "comparison", "statistic", "n_seeds", "effect_mean", "effect_sd",
                        "p_value", "p_holm", "verdict_unadjusted", "verdict", "power_10", "seeds_80")
            if c in rows.columns]
    return md_table(rows[keep])


def summary_block(overall: pd.DataFrame, results: Path, n_grid: int, readme: Path, page: Path) -> str:
    """The project README's view of the publication: Figure 3 and five lines (the claims by verdict,
    headline statistic, and how many cells stand behind them), linking to the page; links relative
    to ``readme``'s folder."""
    n_cells = len(result_files(results))
    relative = Path(os.path.relpath(results, readme.parent)).as_posix()
    by_verdict = {v: ", ".join(overall.loc[overall["verdict"] == v, "claim"]) or "none"
                  for v in VERDICT_MARK}
    status = ("complete" if n_cells >= n_grid
              else f"in progress: {n_cells} of {n_grid} cells so far, verdicts will change")
    return "\n".join([
        f"![Figure 3 of the reproduction]({relative}/_report/fig3_discrete.png)", "",
        f"- **Reproduced:** {by_verdict['reproduced']}",
        f"- **Not reproduced:** {by_verdict['not reproduced']}",
        f"- **Inconclusive:** {by_verdict['inconclusive']}; **not run yet:** {by_verdict['not run']}",
        f"- By the final-iteration log10 regret, Holm-adjusted within each claim, 10 seeds, full effort; "
        f"the run: {status}",
        f"- Every figure, the claims and the evidence: [the reproduction page]"
        f"({Path(os.path.relpath(page, readme.parent)).as_posix()})",
    ])


def extra_block(paper: pd.DataFrame, extra: pd.DataFrame) -> str:
    """The sub-claims the paper-extra run gave more seeds, at the paper run's 10 seeds (its Holm
    adjusted p and verdict) and at 30. At 30 the p is Bonferroni-adjusted over the sub-claim's family
    in the paper run (``family``: the claim's sub-claims on one statistic), which stays valid
    whatever the family's other members, still at 10 seeds, would show; the extra run's own report
    adjusts within the smaller family it holds, so its verdicts are the less conservative ones."""
    keys = ["claim", "problem", "comparison", "statistic"]
    paper = paper.loc[paper["variant"] == "default"]
    extra = extra.loc[(extra["variant"] == "default") & extra["claim"].isin(paper["claim"])]
    both = paper.merge(extra, on=keys, suffixes=("_10", "_30"))
    both = both.loc[both["n_seeds_30"] > both["n_seeds_10"]]
    k = both["family_10"]
    p30 = (both["p_value_30"] * k).clip(upper=1.0)
    against30 = (both["p_against_30"] * k).clip(upper=1.0)
    verdict30 = pd.Series("inconclusive", index=both.index)
    verdict30[against30 < 0.05] = "not reproduced"
    verdict30[p30 < 0.05] = "reproduced"
    table = pd.DataFrame({
        **{key: both[key] for key in keys},
        "effect (10)": both["effect_mean_10"], "p Holm (10)": both["p_holm_10"],
        "verdict (10)": both["verdict_10"].map(VERDICT_MARK),
        "seeds": both["n_seeds_30"], "effect (30)": both["effect_mean_30"], "p (30)": both["p_value_30"],
        "p x family (30)": p30, "verdict (30)": verdict30.map(VERDICT_MARK)})
    return md_table(table)


def final_block(final: pd.DataFrame) -> str:
    """The final-iteration table, one row per series (mean log10 regret, 70 % band, seconds)."""
    return md_table(final)


def cvar_blocks(summary: pd.DataFrame) -> dict[str, str]:
    """The CVaR how-to's tables from the cvar run's ``final_table.csv``: per target (``cvar``,
    ``var``) the final log10 regret (``cvar-TARGET-regret``) and the median seconds per proposal
    (``cvar-TARGET-seconds``), one row per problem in :data:`CVAR_TITLES`' order, one column per
    series, the report's note (seeds per cell, options) above each."""
    out = {}
    for target, (regret, seconds, note) in pivot_tables(summary).items():
        for kind, pivot in (("regret", regret), ("seconds", seconds)):
            pivot = pivot.set_index("problem").reindex([p for p in CVAR_TITLES if p in set(pivot["problem"])])
            table = pivot.drop(columns=["alpha", "T"]).rename(index=CVAR_TITLES).reset_index()
            table.columns = ["problem", *(f"`{c}`" for c in table.columns[1:])]
            out[f"cvar-{target}-{kind}"] = f"{note.rstrip('.')}.\n\n{md_table(table)}"
    return out


def blocks(results: Path, readme: Path = README, page: Path = PAGE, extra: Path | None = None,
           cvar: Path | None = None) -> dict[str, str]:
    """Every generated block's content, by name (the README's links relative to ``readme``); the
    ``extra`` blocks when that folder (default: ``paper-extra`` beside ``results``) has a report, and
    the CVaR how-to's when ``cvar`` (default: ``cvar`` beside ``results``) has one."""
    extra = extra if extra is not None else results.parent / EXTRA.name
    cvar = cvar if cvar is not None else results.parent / CVAR.name
    report = results / "_report"
    overall = pd.read_csv(report / "claims_overall.csv")
    claims = pd.read_csv(report / "claims.csv")
    out = {"provenance": provenance_block(results), "verdicts": verdict_block(overall),
           "subclaims": subclaim_block(claims), "sources": sources_table(STUDY),
           "final": final_block(pd.read_csv(report / "final_table.csv")),
           "reproduction": summary_block(overall, results, _grid_size(results), readme, page)}
    for stem, title, statement, figure_claims in FIGURES:
        out[stem] = figure_block(stem, title, statement, figure_claims, overall)
    if (extra / "_report" / "claims.csv").is_file():
        out["extra"] = extra_block(claims, pd.read_csv(extra / "_report" / "claims.csv"))
        out["extra-provenance"] = provenance_block(extra)
    if (cvar / "_report" / "final_table.csv").is_file():
        out.update(cvar_blocks(pd.read_csv(cvar / "_report" / "final_table.csv")))
        out["cvar-status"] = cvar_status_block(cvar)
    return out


def cvar_status_block(cvar: Path) -> str:
    """How much of the ``cvar`` grid the published report covers (one row of ``final_regret.csv`` per
    cell), and what that means for the tables."""
    n_cells, n_grid = len(pd.read_csv(cvar / "_report" / "final_regret.csv")), _grid_size(cvar)
    if n_cells >= n_grid:
        return f"The run is complete: {n_cells} of {n_grid} cells."
    return (f"The run is in progress: {n_cells} of {n_grid} cells so far. A table's empty cell is a "
            f"(problem, method) still to run; a note above a table names the pairs with fewer seeds "
            f"than the others.")


def _grid_size(results: Path) -> int:
    """The number of cells the folder's grid lists (``_grid.json``)."""
    return len(json.loads((results / "_grid.json").read_text())["cells"])


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m studies.nguyen2021.page`` (also the documentation's CLI
    reference)."""
    parser = argparse.ArgumentParser(prog="python -m studies.nguyen2021.page",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=RESULTS, help="the published results folder")
    parser.add_argument("--page", type=Path, default=PAGE, help="the page to rewrite")
    parser.add_argument("--extra", type=Path, default=None,
                        help="the paper-extra results folder (default: paper-extra beside --results)")
    parser.add_argument("--readme", type=Path, default=README,
                        help="the project README, whose 'reproduction' block summarizes the page")
    parser.add_argument("--cvar-page", type=Path, default=CVAR_PAGE,
                        help="the CVaR how-to, whose tables come from the cvar run beside --results")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a block differs")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    made = blocks(args.results.resolve(), args.readme.resolve(), args.page.resolve(),
                  args.extra.resolve() if args.extra is not None else None)
    stale = []
    for path in (args.page, args.readme, args.cvar_page):
        text = path.read_text()
        rendered = render(text, made)
        if rendered != text:
            stale.append(path)
            if not args.check:
                path.write_text(rendered)
    if args.check and stale:
        print(f"{', '.join(map(str, stale))}: generated blocks differ from {args.results}/_report; run "
              "python -m studies.nguyen2021.page", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
