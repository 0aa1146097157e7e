"""The README as CI and a reader use it: the two lines where .ci/run looks for them, and a table of
contents whose every link names a heading."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


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


def test_every_contents_link_names_a_heading() -> None:
    text = README.read_text()
    headings = {re.sub(r"[^a-z0-9_ -]", "", h.lower()).replace(" ", "-")
                for h in re.findall(r"^#{2,4} (.+)$", text, flags=re.MULTILINE)}
    contents = text[text.index("**Contents:**"):text.index("## Two lines")]
    links = re.findall(r"\]\(#([^)]+)\)", contents)
    assert len(links) >= 10
    assert [link for link in links if link not in headings] == []
