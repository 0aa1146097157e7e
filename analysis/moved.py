"""``python -m analysis.moved OLD NEW``: which verdicts moved between two reports of a study.

    python -m analysis.moved OLD NEW      # each a report folder, or a results folder with its _report

For a republication (a study rerun at other settings, or with changed code) or a rerun of your own
against a published report: it lists, as Markdown,

* each claim whose verdict moved, on its headline statistic or on the last ten iterations
  (``claims_overall.csv``), and
* each sub-claim whose verdict moved, or that only one report decides (``claims.csv``), with both
  sides' seeds and effects, so that the reader sees why.

A sub-claim is one row of ``claims.csv``: (claim, problem, comparison, statistic, variant). Where a
claim compares one pair on a problem twice (on VaR and on CVaR) the two rows share that label, and the
k-th of one report is matched with the k-th of the other, as the claim lists its comparisons; the
measure (the ``data`` column's end, "final-iteration log10 regret of CVaR") is shown.

Exit codes: 0 listed (moved or not); 2 bad input (one line).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from harness.cli import EXIT_USAGE, Parser, UsageError, exit_with

PROG = "python -m analysis.moved"
#: What names a sub-claim in ``claims.csv`` (with the k-th occurrence of the label).
SUBCLAIM_KEYS = ["claim", "problem", "comparison", "statistic", "variant"]
#: The overall verdicts of ``claims_overall.csv`` compared, by column: the headline's and the last ten's.
OVERALL = {"verdict": "headline", "verdict_last10": "last 10"}
#: A side that does not decide the sub-claim or claim.
ABSENT = "-"


def report_folder(path: Path) -> Path:
    """The report folder of ``path``: itself where it holds ``claims.csv``, else its ``_report``.

    Args:
        path: a report folder or a results folder.

    Returns:
        The folder holding ``claims.csv`` and ``claims_overall.csv``.

    Raises:
        UsageError: neither holds both tables.
    """
    for folder in (path, path / "_report"):
        if (folder / "claims.csv").is_file() and (folder / "claims_overall.csv").is_file():
            return folder
    raise UsageError(f"{path} holds no report's claims (claims.csv and claims_overall.csv, or _report/ "
                     "with them): python -m analysis.report FOLDER makes one")


def _read(path: Path) -> pd.DataFrame:
    """A claims table, every cell as text ('' for empty)."""
    try:
        return pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError, pd.errors.ParserError) as error:
        raise UsageError(f"{path}: not a readable claims table ({error})") from None


def _keyed(table: pd.DataFrame) -> pd.DataFrame:
    """``claims.csv`` indexed by :data:`SUBCLAIM_KEYS` and the label's occurrence."""
    missing = [c for c in (*SUBCLAIM_KEYS, "verdict") if c not in table.columns]
    if missing:
        raise UsageError(f"a claims table without the columns {', '.join(missing)}")
    occurrence = table.groupby(SUBCLAIM_KEYS, sort=False).cumcount()
    return table.set_index([*(table[k] for k in SUBCLAIM_KEYS), occurrence.rename("k")])


def moved_subclaims(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """The sub-claims whose verdict differs between ``old`` and ``new``, or that one of them lacks.

    Args:
        old: a ``claims.csv``, read as text.
        new: another.

    Returns:
        One row per such sub-claim, in ``new``'s order then ``old``'s, columns :data:`SUBCLAIM_KEYS`,
        ``measure``, ``old``, ``new`` (the verdicts, :data:`ABSENT` for a side without it), ``old_seeds``,
        ``new_seeds``, ``old_effect`` and ``new_effect``.
    """
    a, b = _keyed(old), _keyed(new)
    index = b.index.append(a.index.difference(b.index, sort=False))
    rows = []
    for key in index:
        left = a.loc[key] if key in a.index else None
        right = b.loc[key] if key in b.index else None
        verdicts = [ABSENT if s is None else s["verdict"] for s in (left, right)]
        if verdicts[0] == verdicts[1]:
            continue
        either = right if right is not None else left
        rows.append({**dict(zip(SUBCLAIM_KEYS, key[:-1], strict=True)),
                     "measure": either.get("data", "").rpartition(": ")[2],
                     "old": verdicts[0], "new": verdicts[1],
                     **{f"{side}_{what}": ABSENT if s is None else s.get(column, "")
                        for side, s in (("old", left), ("new", right))
                        for what, column in (("seeds", "n_seeds"), ("effect", "effect"))}})
    return pd.DataFrame(rows, columns=[*SUBCLAIM_KEYS, "measure", "old", "new", "old_seeds", "new_seeds",
                                       "old_effect", "new_effect"])


def moved_claims(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """The claims whose overall verdict differs between ``old`` and ``new`` (``claims_overall.csv``).

    Args:
        old: a ``claims_overall.csv``, read as text.
        new: another.

    Returns:
        One row per claim and statistic that moved, columns ``claim``, ``statistic`` (:data:`OVERALL`),
        ``old``, ``new`` (:data:`ABSENT` for a side without the claim) and ``sub-claims`` (``new``'s
        counts, else ``old``'s).
    """
    a, b = old.set_index("claim"), new.set_index("claim")
    rows = []
    for claim in [*b.index, *(c for c in a.index if c not in b.index)]:
        for column, statistic in OVERALL.items():
            verdicts = [(t.at[claim, column] if claim in t.index and column in t.columns else "") or ABSENT
                        for t in (a, b)]
            if verdicts[0] != verdicts[1]:
                counts = (b if claim in b.index else a).get("sub-claims", pd.Series(dtype=str)).get(claim, "")
                rows.append({"claim": claim, "statistic": statistic, "old": verdicts[0], "new": verdicts[1],
                             "sub-claims": counts})
    return pd.DataFrame(rows, columns=["claim", "statistic", "old", "new", "sub-claims"])


def _markdown(frame: pd.DataFrame) -> str:
    """``frame`` as a Markdown table ('|' in a cell escaped)."""
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |"
              for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def moved_text(old: Path, new: Path) -> str:
    """What moved from the report ``old`` to the report ``new``, as Markdown (module docstring).

    Args:
        old: a report folder (:func:`report_folder`).
        new: another.

    Returns:
        The text: a heading and a table for the claims and for the sub-claims, or a line saying none moved.
    """
    claims = moved_claims(_read(old / "claims_overall.csv"), _read(new / "claims_overall.csv"))
    subclaims = moved_subclaims(_read(old / "claims.csv"), _read(new / "claims.csv"))
    parts = [f"Verdicts from {old} to {new}.", "", f"## Claims whose verdict moved ({len(claims)})", ""]
    parts.append(_markdown(claims) if len(claims) else "None.")
    parts += ["", f"## Sub-claims whose verdict moved, or that one report lacks ({len(subclaims)})", ""]
    parts.append(_markdown(subclaims) if len(subclaims) else "None.")
    return "\n".join(parts)


def build_parser() -> Parser:
    """The command line of ``python -m analysis.moved``.

    Returns:
        The parser of ``OLD`` and ``NEW``.
    """
    parser = Parser(prog=PROG, description="List the claims and sub-claims whose verdict moved between two "
                    "reports of a study.", epilog="Exit codes: 0 listed; 2 bad input.")
    parser.add_argument("old", metavar="OLD", help="a report folder, or a results folder with _report/")
    parser.add_argument("new", metavar="NEW", help="another (the newer)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m analysis.moved`` (module docstring).

    Args:
        argv: the command's arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit code, 0 listed, :data:`harness.cli.EXIT_USAGE` for bad input.
    """
    try:
        args = build_parser().parse_args(argv)
        text = moved_text(report_folder(Path(args.old)), report_folder(Path(args.new)))
    except UsageError as error:
        print(f"analysis.moved: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    print(text)
    return 0


if __name__ == "__main__":
    exit_with(main)
