"""The documentation against the code: the results schema's page names every column the files have,
the short commands the pages tell a reader to type run, and every registered problem and algorithm
has its generated section (the Python examples of the pages run as tests of their own:
docs/conftest.py)."""

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from harness.schema import ROW_SCHEMA

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


def _generated() -> ModuleType:
    """``docs/_ext/varbo_generated.py``, the Markdown of the site's generated lists (no Sphinx needed)."""
    if "varbo_generated" not in sys.modules:
        spec = importlib.util.spec_from_file_location("varbo_generated", DOCS / "_ext" / "varbo_generated.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["varbo_generated"] = module  # its dataclass looks its module up there
        spec.loader.exec_module(module)
    return sys.modules["varbo_generated"]


def test_every_registered_problem_of_a_module_of_its_own_has_its_section() -> None:
    """A problem lands as its module and one registry entry: the problems page shows its module's
    docstring under a heading that names it, with no per-problem text on the page."""
    from problems import PROBLEMS
    from problems.registry import __name__ as registry

    generated = _generated()
    sections = generated.problem_sources()
    labelled = [label for section in sections for label in section.labels]
    own = [name for name, factory in PROBLEMS.items() if generated.factory_module(factory) != registry]
    assert labelled == [f"problem-{name}" for name in own]
    assert {"problem-branin-williams-2-2", "problem-yacht-5-1"} <= set(labelled)
    assert generated.undocumented_modules() == []
    for section in sections:
        assert all(f"`{label.removeprefix('problem-')}`" in section.title for label in section.labels)
        assert "{eval-rst}" in section.body
    page = (DOCS / "reference" / "problems.md").read_text()
    assert "```{varbo-problem-sources}" in page


def test_every_registered_algorithm_has_its_section_in_the_registry_order() -> None:
    """An algorithm lands as its module and one registry entry: the algorithms page shows its label
    (which the table links to), heading, origin and options without a line of its own on the page."""
    from algorithms import ALGORITHMS

    generated = _generated()
    sections = generated.algorithm_sections()
    assert [s.labels for s in sections] == [(f"options-{name}",) for name in ALGORITHMS]
    assert [s.title for s in sections] == [f"`{name}`" for name in ALGORITHMS]
    table = generated.algorithms_table()
    for section, name in zip(sections, ALGORITHMS, strict=True):
        assert generated.options_table(name) in section.body
        assert f"](#options-{name})" in table
    page = (DOCS / "reference" / "algorithms.md").read_text()
    assert "```{varbo-algorithm-sections}" in page
    assert not re.search(r"\(options-[\w-]+\)=|\{varbo-algorithm-options\}", page), "a hand-written section"
