"""The README as CI and a reader use it: the two lines where .ci/run looks for them, two screens at
most, and links that all lead somewhere (its details live on the documentation's pages)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def _after(lines: list[str], start: str, count: int = 3) -> list[str]:
    """What ``grep -A3 '^START'`` prints: each matching line and the ``count`` lines after it."""
    out = []
    for i, line in enumerate(lines):
        if line.startswith(start):
            out += lines[i:i + count + 1]
    return out


def test_the_two_lines_are_where_ci_finds_them() -> None:
    lines = README.read_text().splitlines()
    test_lines = [line for line in _after(lines, "Install and run the tests")
                  if line.startswith("python3 -m venv")]
    assert test_lines, ".ci/run would find no test line (it greps 3 lines after 'Install and run the tests')"
    assert test_lines[0].endswith("pytest") and "torch==2.13.0" in test_lines[0]
    main_lines = [line for line in _after(lines, "```bash", 1) if "--grid paper" in line]
    assert main_lines and main_lines[0].startswith("python3 -m venv") and "torch==2.13.0" in main_lines[0]


def test_the_readme_is_two_screens_and_keeps_the_generated_block() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    assert "## The paper, reproduced" in text
    assert text.count("<!-- generated: reproduction -->") == 1
    assert text.count("<!-- end generated: reproduction -->") == 1


def slug(heading: str) -> str:
    """A heading's anchor as GitHub and MyST (myst_heading_anchors) make it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file: its headings' slugs and its MyST labels ``(name)=``."""
    text = path.read_text()
    return ({slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, flags=re.MULTILINE)}
            | set(re.findall(r"^\(([\w-]+)\)=$", text, flags=re.MULTILINE)))


def test_every_link_of_the_readme_leads_to_a_file_and_heading() -> None:
    text = README.read_text()
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [link for link in links if "://" not in link]
    assert len(local) >= 20  # the links into the documentation
    broken = []
    for link in local:
        target, _, anchor = link.partition("#")
        path = (ROOT / target) if target else README
        missing_anchor = path.is_file() and bool(anchor) and anchor not in anchors(path)
        if not path.exists() or missing_anchor:
            broken.append(link)
    assert broken == []
