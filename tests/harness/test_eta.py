"""The grid's ETA (harness.ray_runner.Eta) on timelines whose remaining time is known by construction."""

import pytest

from harness.cell import CellSpec
from harness.ray_runner import Eta


def _cells(n: int) -> list[CellSpec]:
    return [CellSpec.make("branin-1-1-discrete", "vucb-prob", seed=s) for s in range(n)]


def test_exact_costs_give_the_exact_remaining_time_and_it_falls_while_cells_run() -> None:
    a, b, c, d = _cells(4)
    eta = Eta(dict.fromkeys((a, b, c, d), 10.0))
    assert eta.seconds(0.0, cpus=2) == pytest.approx(20.0)  # 40 s of work on 2 CPUs
    eta.running([a, b], 0.0)
    # no cell finishes between t = 0 and 9: the ETA falls by one second a second (never grows)
    assert [eta.seconds(t, 2) for t in (1.0, 4.0, 9.0)] == pytest.approx([19.0, 16.0, 11.0])
    eta.finished(a, 10.0)
    eta.finished(b, 10.0)
    eta.running([c, d], 10.0)
    assert eta.seconds(13.0, 2) == pytest.approx(7.0)


def test_finished_cells_calibrate_the_cost_model() -> None:
    a, b, c, d = _cells(4)
    eta = Eta(dict.fromkeys((a, b, c, d), 10.0))
    eta.running([a, b], 0.0)
    eta.finished(a, 20.0)  # the cells take twice their estimate
    eta.finished(b, 20.0)
    assert eta.seconds(20.0, 2) == pytest.approx(20.0)  # two cells of 20 s on 2 CPUs
    eta.running([c, d], 20.0)
    assert eta.seconds(25.0, 2) == pytest.approx(15.0)


def test_the_last_cell_is_not_shared_by_idle_cpus_and_a_requeued_cell_starts_over() -> None:
    a, b = _cells(2)
    eta = Eta({a: 30.0, b: 1.0})
    eta.running([a, b], 0.0)
    eta.finished(b, 1.0)
    assert eta.seconds(10.0, 2) == pytest.approx(20.0)  # one 30 s cell, 10 s in: not (20 / 2)
    eta.requeued(a)  # its worker died; it reruns (from a checkpoint, which the ETA ignores)
    assert eta.seconds(10.0, 2) == pytest.approx(30.0)
    eta.finished(a, 30.0)
    assert eta.seconds(40.0, 2) == 0.0
