"""``harness.status``'s line on the remaining cells."""

from pathlib import Path

from harness.spec import CellSpec


def test_the_remaining_line_gives_a_command_that_resolves(tmp_path: Path) -> None:
    """A named grid is named in the dry-run command the line suggests; a grid run from a file records
    its own name, which ``--grid`` would not resolve, so the line asks for the file instead."""
    from harness.status import remaining_line

    spec = CellSpec.make("branin-1-1-discrete", "random", 0, 3)
    named = remaining_line(tmp_path, {spec: "missing"}, "smoke")
    assert "remaining: 1 cells" in named and f"--grid smoke --out {tmp_path} --dry-run)" in named
    from_file = remaining_line(tmp_path, {spec: "missing"}, "my-grid")
    assert "--grid GRID_FILE" in from_file and "the file that defines grid 'my-grid'" in from_file
