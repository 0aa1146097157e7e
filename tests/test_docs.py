"""The documentation against the code: the results schema's page names every column the files have,
and the short commands the pages tell a reader to type run (the Python examples of the pages run as
tests of their own: docs/conftest.py)."""

import re
from pathlib import Path

import pytest

from harness.results import ROW_SCHEMA

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _pages() -> str:
    return "\n".join(p.read_text() for p in DOCS.rglob("*.md")
                     if "_build" not in p.parts and "reproduction" not in p.parts)


def test_the_schema_page_names_every_column_once() -> None:
    text = (DOCS / "reference" / "results-schema.md").read_text()
    table = text[text.index("| column | meaning |"):text.index("File metadata")]
    named = [name for row in table.splitlines()[2:] for name in re.findall(r"`(\w+)`", row.split(" | ")[0])]
    assert sorted(named) == sorted(ROW_SCHEMA.names)


COMMANDS = [
    ("harness.run", "python -m harness.run --list"),
    ("harness.run", "python -m harness.run --describe vucb-prob"),
    ("harness.run", "python -m harness.run --grid quick --dry-run"),
    ("problems", "python -m problems"),
]


@pytest.mark.parametrize(("module", "command"), COMMANDS)
def test_the_short_commands_of_the_pages_run(module: str, command: str, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture) -> None:
    assert re.search(rf"^{re.escape(command)}( |$)", _pages(), flags=re.MULTILINE), f"no page shows {command}"
    monkeypatch.chdir(tmp_path)
    if module == "harness.run":
        from harness.run import main
    else:
        from problems.__main__ import main
    argv = command.split()[3:]
    assert main(argv) == 0
    assert capsys.readouterr().out.strip()
    assert list(tmp_path.iterdir()) == []  # they write nothing
