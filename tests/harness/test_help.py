"""What the command line says about itself: ``--help`` (both modes), ``--list`` (grids and
algorithms), ``--describe ALGORITHM``, and the grouped ``--dry-run`` (``--verbose``: every cell).
All in process and without Ray."""

import inspect
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import harness.dry_run as dry_run
import harness.grid_args as grid_args
import harness.grid_cli as grid_cli
from algorithms import ALGORITHMS, describe_options
from algorithms.rhokg import RhoKGApx
from harness.estimates import estimate_seconds
from harness.grid import smoke_grid
from harness.grid_cells import cell_label
from harness.run import DESCRIBE_HELP, build_parser, main

ROOT = Path(__file__).resolve().parents[2]


def run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def flat(text: str) -> str:
    return " ".join(text.split())


def option_helps(parser) -> dict[str, str]:
    """The long option strings of a parser and their help."""
    return {a.option_strings[-1]: a.help for a in parser._actions
            if a.option_strings and a.help and a.option_strings[-1] != "--help"}


def sections(text: str) -> dict[str, list[str]]:
    """The help's sections (title line -> lines), split at the lines ending in a colon."""
    found: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            current = found.setdefault(line, [])
        elif current is not None:
            current.append(line)
    return found


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_covers_both_modes_each_option_once_with_its_help(flag: str,
                                                                capsys: pytest.CaptureFixture) -> None:
    code, out, err = run(capsys, flag)
    assert code == 0 and not err
    assert "Two modes" in out.split("\n\n")[1]  # the overview, after the usage lines
    usage = out.split("\n\n")[0]
    assert "--problem" in usage and "--grid" in usage and "--describe" in usage
    parts = sections(out)
    cell = next(lines for title, lines in parts.items() if title.startswith("one cell"))
    grid = next(lines for title, lines in parts.items() if title.startswith("a grid"))
    info = next(lines for title, lines in parts.items() if title.startswith("information"))
    grid_options = option_helps(grid_args.build_parser())
    expected = [(cell, option_helps(build_parser())),
                (grid, {k: v for k, v in grid_options.items() if k != "--list"}),
                (info, {"--list": grid_options["--list"], "--describe": DESCRIBE_HELP})]
    for lines, helps in expected:
        listed = Counter(m.group(1) for line in lines if (m := re.match(r"  (--[\w-]+)", line)))
        assert set(listed) == set(helps) and set(listed.values()) == {1}, listed
        for option, help_text in helps.items():
            assert flat(help_text) in flat("\n".join(lines)), option
    for option in ("--problem", "--seed", "--grid", "--only", "--dry-run", "--num-cpus", "--verbose",
                   "--list", "--describe", "--help"):
        assert re.search(rf"^  (-h, )?{option}\b", out, re.M), option


def test_help_wins_over_a_cell_s_options_and_the_grid_keeps_its_own(capsys: pytest.CaptureFixture) -> None:
    full = run(capsys, "--help")[1]
    assert run(capsys, "--problem", "nope", "--help") == (0, full, "")
    with pytest.raises(SystemExit) as done:
        main(["--grid", "smoke", "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert "--dry-run" in text and "--problem" not in text


def test_list_names_every_algorithm_its_kinds_of_z_and_its_options(capsys: pytest.CaptureFixture) -> None:
    code, out, _ = run(capsys, "--list")
    assert code == 0
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("algorithms"))
    blocks: dict[str, str] = {}
    for line in lines[start + 1:]:
        if not line.startswith("   "):  # an algorithm's first line; continuation lines are indented
            key = line.split()[0]
            blocks[key] = ""
        blocks[key] += " " + line
    assert list(blocks) == list(ALGORITHMS)
    for key, factory in ALGORITHMS.items():
        first = blocks[key].split(None, 1)[1]
        assert all(kind in first for kind in factory.z_kinds)
        options = describe_options(factory)
        assert set(re.findall(r"\w+", blocks[key])) >= {o.name for o in options}
        if not options:
            assert "no options" in blocks[key]
    assert "on a continuous Z: n_starts" in flat(blocks["vucb-prob"])


def option_rows(out: str) -> dict[str, dict[str, str]]:
    """``--describe``'s tables: section title -> option name -> its first line."""
    return {title: {line.split()[0]: line for line in lines if line.startswith("  ") and line[2] != " "}
            for title, lines in sections(out).items() if title.startswith("On a")}


def test_describe_prints_every_option_with_its_signature_default(capsys: pytest.CaptureFixture) -> None:
    code, out, err = run(capsys, "--describe", "rhokg-apx")
    assert code == 0 and not err
    tables = option_rows(out)
    rows = {name: line for table in tables.values() for name, line in table.items()}
    assert sum(len(t) for t in tables.values()) == len(rows)  # each option once
    signature = inspect.signature(RhoKGApx.__init__).parameters
    names = [n for n in signature if n not in ("self", "problem", "seed_root", "risk")]
    assert sorted(rows) == sorted(names)
    for name in names:
        fields = rows[name].split(None, 2)
        assert fields[1] == json.dumps(signature[name].default), name
        assert len(fields) == 3 and fields[2].strip(), f"{name} has no meaning"
    # num_w_samples counts only on a continuous Z
    assert "On a continuous Z only:\n  num_w_samples" in out


def test_describe_splits_the_options_by_kind_of_z_where_they_differ(capsys: pytest.CaptureFixture) -> None:
    out = run(capsys, "--describe", "vucb-prob")[1]
    starts = {title: list(rows) for title, rows in option_rows(out).items()}
    assert starts["On a discrete or a continuous Z:"] == ["beta"]
    assert starts["On a discrete Z only:"] == ["n_raw", "n_restarts", "maxiter"]
    assert "n_starts" in starts["On a continuous Z only:"] and "lr_x" in starts["On a continuous Z only:"]
    assert "null" in out  # n_raw's default, as --option would read it
    stableopt = sections(run(capsys, "--describe", "stableopt")[1])
    assert [t for t in stableopt if t.startswith("On a")] == ["On a discrete Z:"]


def test_describe_takes_an_import_path(capsys: pytest.CaptureFixture) -> None:
    code, out, _ = run(capsys, "--describe", "tests.plugins.toy_plugin:Toy")
    assert code == 0 and "No options." in out and "handles a discrete Z" in out


@pytest.mark.parametrize("argv", [["--describe", "nope"], ["--describe", "nope.module:Thing"],
                                  ["--describe", "random", "--seed", "3"], ["--describe"]])
def test_describe_of_bad_input_is_one_line_and_exit_2(argv: list[str], capsys: pytest.CaptureFixture) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and not out
    assert len(err.strip().splitlines()) == 1 and err.startswith("harness.run: error: ")


def test_help_list_and_describe_never_import_ray() -> None:
    script = ("import contextlib, io, sys\n"
              "from harness.run import main\n"
              "for argv in (['--help'], ['--list'], ['--describe', 'vucb-prob']):\n"
              "    with contextlib.redirect_stdout(io.StringIO()):\n"
              "        assert main(argv) == 0\n"
              "print('ray' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def table(out: str) -> tuple[list[str], list[list[str]], dict[str, str]]:
    """The dry run's table: header, group rows (split on 2+ spaces), and the total row by the
    header's names (its alpha, T and gp are empty)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("problem "))
    end = next(i for i, line in enumerate(lines) if line.startswith("total "))
    split = [re.split(r"\s{2,}", line.strip()) for line in lines[start:end + 1]]
    header, total = split[0], split[-1]
    numbers = header[header.index("done"):header.index("options")]
    return header, split[1:-1], {"groups": total[1], **dict(zip(numbers, total[2:], strict=True))}


def test_dry_run_prints_one_line_per_group_with_counts_that_add_up(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture) -> None:
    out_dir = tmp_path / "empty"
    code, out, _ = run(capsys, "--grid", "smoke", "--dry-run", "--out", str(out_dir))
    assert code == 0 and not out_dir.exists()
    cells = smoke_grid().cells
    groups = Counter(dry_run.group_key(c) for c in cells)
    header, rows, total = table(out)
    assert header[:6] == ["problem", "algorithm", "alpha", "T", "gp", "risk"]
    assert len(rows) == len(groups)
    states = [header.index(h) for h in ("done", "to run", "failed", "n/a")]
    assert sum(int(row[i]) for row in rows for i in states) == len(cells)
    assert sum(int(row[header.index("to run")]) for row in rows) == len(cells)
    assert [int(total[h]) for h in ("done", "to run", "failed", "n/a")] == [0, len(cells), 0, 0]
    assert all(float(row[header.index("CPU min")]) > 0 for row in rows)
    assert float(total["CPU min"]) == pytest.approx(
        sum(float(row[header.index("CPU min")]) for row in rows), abs=0.05 * len(rows))
    assert total["groups"] == f"{len(groups)} groups"
    assert "seed0" not in out  # no per-cell lines
    assert f"to run: {len(cells)} cells" in out and "CPU time" in out
    # the group's own values: the smoke grid's 3 iterations and its reduced rho-KG^apx effort
    rhokg = next(row for row in rows if row[1] == "rhokg-apx")
    assert rhokg[header.index("T")] == "3" and "restarts_per_dim=" in rhokg[-1]


def test_dry_run_verbose_also_lists_every_cell(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    code, out, _ = run(capsys, "--grid", "smoke", "--dry-run", "--verbose", "--out", str(tmp_path / "e"))
    assert code == 0
    cells = smoke_grid().cells
    listed = [line for line in out.splitlines() if line.startswith("  to run ")]
    assert len(listed) == len(cells)
    assert all(f" {cell_label(c)}  ~" in line for c, line in zip(cells, listed, strict=True))
    assert len(table(out)[1]) == len({dry_run.group_key(c) for c in cells})


def test_dry_run_counts_each_state_and_shows_missing_cells_left_by_retry_failed(
        tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    cells = list(smoke_grid().cells)
    cycle = ["done", "failed", "missing", "not available"]
    states = {c: cycle[i % 4] for i, c in enumerate(cells)}
    monkeypatch.setattr(grid_cli, "classify", lambda specs, out: {s: states[s] for s in specs})
    for extra, column in (((), "to run"), (("--retry-failed",), "missing")):
        code, out, _ = run(capsys, "--grid", "smoke", "--dry-run", "--out", str(tmp_path / "e"), *extra)
        assert code == 0
        header, rows, total = table(out)
        assert column in header
        counted = [h for h in ("done", "to run", "failed", "missing", "n/a") if h in header]
        assert sum(int(total[h]) for h in counted) == len(cells)
        expected = Counter(states.values())
        if extra:  # the failed cells are the ones to run; the missing ones stay missing
            assert int(total["to run"]) == expected["failed"]
            assert int(total["missing"]) == expected["missing"]
        else:
            assert "missing" not in header
            assert int(total["to run"]) == expected["missing"]
        assert int(total["done"]) == expected["done"]
        assert int(total["n/a"]) == expected["not available"]
        for row in rows:  # per group too
            members = [c for c in cells if (c.problem, c.algorithm, c.risk) == (row[0], row[1], row[5])
                       and " ".join(f"{k}={v}" for k, v in c.options) == (row[-1] if len(row) > len(
                           header) - 1 else "")]
            assert sum(int(row[header.index(h)]) for h in counted) == len(members), row
        for row in rows:  # a group with nothing to run costs nothing
            if row[header.index("to run")] == "0":
                assert row[header.index("CPU min")] == "-"


def test_verbose_without_dry_run_is_one_line_and_exit_2(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture) -> None:
    code, out, err = run(capsys, "--grid", "smoke", "--verbose", "--out", str(tmp_path / "o"))
    assert code == 2 and not out and "--dry-run" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv", [
    ["harness.run", "--grid", "smoke", "--dry-run", "--out", "{tmp}/never"],
    ["harness.status", "docs/reproduction/paper-extra"],
    ["harness.verify", "docs/reproduction/paper-extra", "--sample", "1"],
], ids=["run --dry-run", "status", "verify"])
def test_a_reader_that_leaves_early_gets_no_traceback(argv: list[str], tmp_path: Path) -> None:
    """``--dry-run | head -1``, ``status | head``: once the reader has gone, the output goes nowhere,
    without a traceback, and the command ends with 141 as SIGPIPE would end it (here the reader is
    gone before the first line: the pipe's read end is closed; verify ends before it reruns)."""
    read, write = os.pipe()
    command = [sys.executable, "-m", *(a.format(tmp=tmp_path) for a in argv)]
    driver = subprocess.Popen(command, cwd=ROOT, stdout=write, stderr=subprocess.PIPE, text=True,
                              env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    os.close(write)
    os.close(read)
    _, err = driver.communicate(timeout=300)
    assert driver.returncode == 141 and not err.strip(), err


def test_dry_run_costs_come_from_the_measured_rates_where_there_are_some(
        tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    rates = {("branin-1-1-discrete", "random", ()): 10.0}  # (problem, algorithm, options)
    monkeypatch.setattr(grid_cli, "measured_rates", lambda out: rates)
    code, out, _ = run(capsys, "--grid", "smoke", "--dry-run", "--out", str(tmp_path / "e"))
    assert code == 0
    header, rows, _ = table(out)
    row = next(r for r in rows if r[:2] == ["branin-1-1-discrete", "random"] and r[5] == "var")
    cells = [c for c in smoke_grid().cells
             if (c.problem, c.algorithm, c.risk) == ("branin-1-1-discrete", "random", "var")]
    expected = sum(estimate_seconds(c, rates) for c in cells) / 60
    assert float(row[header.index("CPU min")]) == pytest.approx(expected, abs=0.05)
    assert expected > 1  # 10 s an iteration: far above the declared rate
    assert "measured seconds per iteration" in out and "1 (problem, algorithm, options, risk) group(s)" in out
