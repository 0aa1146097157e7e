"""The algorithm declares, the runner enforces: the registry checks each class's declarations, a
kind of Z an algorithm does not handle is refused before any work, the regret target and the
theory recommendation come from declarations (never from a name or an info key), the proposal's
info is stored whole, and the kind of Z is read from the problem."""

import json
import subprocess
import sys

import pytest
import torch

import algorithms.loop as loop_module
from algorithms import ALGORITHMS, Algorithm, Proposal, Recommendation, build_algorithm, check_algorithm
from algorithms.random_search import RandomSearch
from algorithms.vucb import VUCBProb
from harness.cell import CellSpec, run_cell
from problems import build_problem, z_kind_of
from problems.measures import WORST_CASE


class Nameless(RandomSearch):
    name = ""


class DiscreteOnly(RandomSearch):
    name = "discrete-only"
    z_kinds = frozenset({"discrete"})


class WorstCaseProb(VUCBProb):
    """V-UCB Prob declaring the worst-case target."""

    name = "worst-case-prob"
    target = WORST_CASE


class KeyOnly(RandomSearch):
    """Puts ``var_lower`` in its info without declaring a lower bound: the key must change nothing."""

    name = "key-only"

    def propose(self, model, t: int) -> Proposal:
        proposal = super().propose(model, t)
        return Proposal(proposal.x, proposal.z, {"var_lower": 1e9, "note": "x", "vector": torch.ones(2)})


def test_the_registry_holds_only_classes_whose_declarations_hold() -> None:
    for key, factory in ALGORITHMS.items():
        check_algorithm(key, factory)  # raises if not
    with pytest.raises(ValueError, match="sets no class attribute name"):
        check_algorithm("nameless", Nameless)
    with pytest.raises(ValueError, match="has name 'discrete-only', not its registry key 'other'"):
        check_algorithm("other", DiscreteOnly)
    with pytest.raises(ValueError, match=r"not a subclass of algorithms\.Algorithm"):
        check_algorithm("fn", lambda problem, seed_root: None)
    bad_kinds = type("BadKinds", (RandomSearch,), {"name": "bad", "z_kinds": frozenset({"both"})})
    with pytest.raises(ValueError, match="z_kinds must be a non-empty subset"):
        check_algorithm("bad", bad_kinds)
    bad_target = type("BadTarget", (RandomSearch,), {"name": "bad", "target": "worst_case"})  # a name
    with pytest.raises(ValueError, match=r"target must be None .* or a measure of problems\.measures"):
        check_algorithm("bad", bad_target)
    for error in ("sets no class attribute name",):
        with pytest.raises(ValueError) as caught:
            check_algorithm("nameless", Nameless)
        assert error in str(caught.value) and "\n" not in str(caught.value)


def test_a_kind_of_z_the_algorithm_does_not_handle_is_refused_before_any_work(monkeypatch) -> None:
    problem = build_problem("branin-1-1-continuous", with_optimum=False)
    with pytest.raises(ValueError, match="handles a discrete Z only; problem 'branin-1-1-continuous' "
                                         "has a continuous one"):
        build_algorithm("discrete-only", DiscreteOnly, problem, 0)
    monkeypatch.setitem(ALGORITHMS, "discrete-only", DiscreteOnly)

    def no_fit(*args, **kwargs):
        raise AssertionError("a GP was fitted before the kind of Z was checked")

    monkeypatch.setattr(loop_module, "fit_gp", no_fit)  # the cell fits through the shared loop
    with pytest.raises(ValueError, match="handles a discrete Z only"):
        run_cell(CellSpec.make("branin-1-1-continuous", "discrete-only", 0, 2))


def test_the_single_cell_command_refuses_it_in_one_line_with_exit_2() -> None:
    done = subprocess.run([sys.executable, "-m", "harness.run", "--problem", "branin-1-1-continuous",
                           "--algorithm", "stableopt", "--out", "/nonexistent/never-written"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "handles a discrete Z only" in done.stderr


def test_the_regret_target_is_what_the_algorithm_declares(monkeypatch) -> None:
    monkeypatch.setitem(ALGORITHMS, "worst-case-prob", WorstCaseProb)
    problem = build_problem("branin-1-1-discrete")
    rows = run_cell(CellSpec.make("branin-1-1-discrete", "worst-case-prob", 1, 2)).rows
    assert all(r["target"] == "worst_case" for r in rows)
    assert all(r["optimum"] == problem.optimum.worst_case for r in rows)
    assert all(r["regret"] == problem.optimum.worst_case - r["worst_rec"] for r in rows)
    plain = run_cell(CellSpec.make("branin-1-1-discrete", "vucb-prob", 1, 2)).rows
    assert all(r["target"] == "var" for r in plain)


def test_no_info_key_changes_a_row_and_info_is_stored_whole(monkeypatch) -> None:
    monkeypatch.setitem(ALGORITHMS, "key-only", KeyOnly)
    rows = run_cell(CellSpec.make("branin-1-1-discrete", "key-only", 0, 2)).rows
    # var_lower is stored as reported, but without a declared lower bound there is no theory x
    assert [r["var_lower"] for r in rows[1:]] == [1e9, 1e9]
    assert all(r.get("x_rec_theory") is None for r in rows)
    assert rows[0]["info"] is None
    assert json.loads(rows[1]["info"]) == {"note": "x", "var_lower": 1e9, "vector": [1.0, 1.0]}
    # a real algorithm: everything it reports, including what has no column of its own
    vucb = run_cell(CellSpec.make("branin-1-1-discrete", "vucb-prob", 0, 2)).rows
    info = json.loads(vucb[2]["info"])
    assert info == {"beta": vucb[2]["beta"], "lv_count": vucb[2]["lv_count"],
                    "var_lower": vucb[2]["var_lower"], "var_upper": vucb[2]["var_upper"]}
    assert vucb[2]["x_rec_theory"] is not None  # V-UCB declares its lower bound


def test_rhokg_info_reaches_the_rows() -> None:
    options = {"restarts_per_dim": 1, "raw_per_restart": 4, "maxiter": 25}
    rows = run_cell(CellSpec.make("branin-1-1-discrete", "rhokg-apx", 0, 1, options=options)).rows
    info = json.loads(rows[1]["info"])
    assert set(info) == {"acq_value", "current_best_estimate"}


def test_the_kind_of_z_is_read_from_the_problem() -> None:
    assert z_kind_of("branin-1-1-continuous") == "continuous"
    assert z_kind_of("portfolio-3-2") == "discrete"
    assert z_kind_of("hartmann-1-2-discrete") == "discrete"


def test_an_algorithm_subclass_declares_its_costs() -> None:
    assert ALGORITHMS["rhokg-apx"].candidates == "xz" and ALGORITHMS["rhokg-apx"].evaluation_batch == 4
    assert ALGORITHMS["vucb-prob"].candidates == "x"
    assert ALGORITHMS["vucb-prob"].proposal_cost("continuous") != ALGORITHMS["vucb-prob"].proposal_cost(
        "discrete")
    assert Algorithm.proposal_cost("discrete") == (0.1, 0.5, 1.0, 1.0)
    assert isinstance(Recommendation(torch.zeros(1)).info, dict)


def test_a_grid_pairing_an_algorithm_with_a_kind_of_z_it_does_not_handle_is_refused() -> None:
    from harness.grid import parse_grid
    from harness.grid_cells import GridError

    data = {"seeds": 1, "iterations": 1,
            "cells": [{"problems": ["branin-1-1-continuous"], "algorithms": ["stableopt"]}]}
    with pytest.raises(GridError, match="handles a discrete Z only") as caught:
        parse_grid(data, "g")
    assert "\n" not in str(caught.value)
