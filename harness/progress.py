"""The grid's progress as its driver shows it: the remaining wall time (:class:`Eta`) and the texts
of the progress line (:func:`format_eta`, :func:`progress_text`).
"""

from __future__ import annotations

from harness.spec import CellSpec


def format_eta(seconds: float) -> str:
    """A remaining time with its units: a bare ``7:30`` could be read as hours or minutes.

    Args:
        seconds: the remaining time.

    Returns:
        ``2 h 05 min``, ``7 min 30 s`` or ``45 s``; ``?`` for NaN or infinity.
    """
    if seconds != seconds or seconds == float("inf"):
        return "?"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"


class Eta:
    """The remaining wall time of a grid.

    The cost model (``costs``, estimated seconds per cell) is calibrated by the work done so far:
    the cells that finished (their measured seconds over their estimates) and the running cells'
    iterations (seconds since they started over the share of their estimate that their iterations
    done since then are). Each unfinished cell has its calibrated cost left: the share of its
    iterations still to run when they are known, else its cost less the time it has been running.
    The total is shared by the CPUs that still have work, and never shorter than the longest cell
    left. Unlike elapsed / done x remaining it does not grow while a long cell runs and none
    finishes. Iterations are taken as equal work (where an algorithm's iteration grows with the data,
    its first ones cost less than the last: the estimate leans optimistic early in such cells).
    """

    def __init__(self, costs: dict[CellSpec, float]) -> None:
        self.left = dict(costs)  # unfinished cells and their estimated seconds
        self.started: dict[CellSpec, float] = {}
        self.measured = 0.0  # seconds of the finished cells
        self.estimated = 0.0  # their estimates
        self.done: dict[CellSpec, float] = {}  # running cell -> share of its iterations finished
        self.first: dict[CellSpec, float] = {}  # ... and the share it (re)started from

    def running(self, specs: list[CellSpec], now: float) -> None:
        """``specs`` are running at ``now`` (the clock of each starts the first time it is seen)."""
        for spec in specs:
            self.started.setdefault(spec, now)

    def resumes(self, spec: CellSpec, share: float) -> None:
        """``spec`` starts from a checkpoint holding ``share`` of its iterations."""
        self.first[spec] = self.done[spec] = share

    def progress(self, spec: CellSpec, share: float) -> None:
        """``share`` of ``spec``'s iterations are finished."""
        if spec in self.left:
            self.first.setdefault(spec, 0.0)
            self.done[spec] = share

    def requeued(self, spec: CellSpec) -> None:
        """``spec`` will run again (its worker died): its clock stops (its checkpoint, if any, is
        reported again by :meth:`resumes`)."""
        self.started.pop(spec, None)
        self.done.pop(spec, None)
        self.first.pop(spec, None)

    def finished(self, spec: CellSpec, seconds: float | None) -> None:
        cost = self.left.pop(spec)
        self.started.pop(spec, None)
        self.done.pop(spec, None)
        self.first.pop(spec, None)
        if seconds is not None and cost > 0:
            self.measured += seconds
            self.estimated += cost

    def seconds(self, now: float, cpus: int) -> float:
        """Estimated wall seconds until every cell has finished, on ``cpus`` CPUs (the class docstring).

        Args:
            now: the clock's time now.
            cpus: the CPUs the cells share.

        Returns:
            The seconds, 0 where no cell is left.
        """
        if not self.left:
            return 0.0
        measured, estimated = self.measured, self.estimated
        for spec, share in self.done.items():
            gained = share - self.first.get(spec, 0.0)
            if spec in self.started and gained > 0:
                measured += now - self.started[spec]
                estimated += self.left[spec] * gained
        scale = measured / estimated if estimated > 0 else 1.0
        rest = []
        for spec, cost in self.left.items():
            if spec in self.done and self.done[spec] > self.first.get(spec, 0.0):
                rest.append(scale * cost * (1.0 - self.done[spec]))
            else:
                elapsed = now - self.started[spec] if spec in self.started else 0.0
                rest.append(max(0.0, scale * cost * (1.0 - self.first.get(spec, 0.0)) - elapsed))
        return max(sum(rest) / min(max(1, cpus), len(rest)), max(rest))


def progress_text(spec: CellSpec, iteration: int | None, iterations: int) -> str:
    """The progress of a running cell: short, for the progress line.

    ``harness.status`` gives each cell's full label, options included.

    Args:
        spec: the cell.
        iteration: its last finished iteration, None before its first report.
        iterations: its iterations.

    Returns:
        ``PROBLEM/ALGORITHM/seed0 it 10/100``, or ``it ?/100`` before its first report.
    """
    done = "?" if iteration is None else iteration
    return f"{spec.problem}/{spec.algorithm}/seed{spec.seed} it {done}/{iterations}"
