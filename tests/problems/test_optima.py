"""The committed optima: recomputed by the documented search, and never beaten by random x."""

import json
import subprocess
import sys

import pytest
import torch

from problems import PROBLEMS, build_problem, get_problem, weighted_cvar
from problems.optima import OPTIMA_FILE, load_table, search_problem
from problems.registry import with_own_search

NAMES = list(PROBLEMS)
#: A continuous Z makes every VaR a quadrature (ms to 0.3 s): those searches take minutes and 10^5
#: random points hours; tests/problems/test_continuous.py checks them with fewer points.
DISCRETE = [n for n in NAMES if build_problem(n, with_optimum=False).z.is_discrete]
#: Problems certified by the grid-and-zoom search; the others (hours of simulation, or minutes of GP
#: means) are tested in their own files with smaller samples.
GRID_SEARCHED = [name for name in DISCRETE if name not in with_own_search()]
#: How closely a stored value is reproduced on another machine. The portfolio surrogate's mean
#: comes from a 3000 x 3000 Cholesky solve whose rounding depends on the BLAS kernels the CPU
#: selects: two machines differed by 7.6e-12 on a value of 17.4 (1 thread on both).
#: The yacht surrogate's (K + noise I) has a condition number of 4e8 and weights up to 1.6e7: a
#: last-bit change of its kernel's distances moves f by 1e-9 (its table, written natively on an
#: AVX-512 machine, differed from the pinned kernels by 5.5e-10; it is now written pinned).
#: Marzat's f6 takes its mean and CVaR as sums over 2^16 QMC nodes, whose rounding follows how
#: many x are evaluated at once (the search's batches against one x here) and the kernels: its
#: pinned table differs from one pinned x by 3.4e-12 (CVaR -2.68), natively by up to 4.6e-12.
#: portfolio-cvucb-3-2's surrogate (K + noise I of condition number near 1e8, weights up to 1.5e5)
#: gives its stored CVaR at its maximizer to 1.2e-13 (the search's batches against one x, pinned).
REPRODUCIBLE_TO = {"portfolio-3-2": 1e-9, "yacht-5-1": 1e-8, "marzat-f6-4-3": 1e-10,
                   "portfolio-cvucb-3-2": 1e-9}
#: Random x per problem where 10^5 would cost more than a few seconds: hartmann6-1-5 takes f at
#: 243 z per x (84 s at 10^5); its x is one-dimensional, so 10^4 random x lie 1e-4 apart on average
#: (its search's grid is 10^5 points, zoomed).
RANDOM_POINTS = {"hartmann6-1-5": 10_000}


def test_table_covers_every_problem_and_names_its_command() -> None:
    payload = json.loads(OPTIMA_FILE.read_text())
    assert payload["command"] == "python -m problems --write-optima"
    assert set(payload["problems"]) == set(NAMES)


#: The two longest searches (Hartmann-6 (1,5), 243 z per x, 45 s; Hartmann-(2,1), a 2-D x, 40 s in CI
#: of 2026-11-28) are left, as CI's 30-minute budget requires, to ``python benchmarks/optima_table.py
#: --problems NAME``, which prints the whole table against the stored one; their stored optima are
#: still checked in every run, at their maximizers and against random x (the tests below)
SEARCHED_IN_CI = [name for name in GRID_SEARCHED if name not in ("hartmann6-1-5", "hartmann-2-1-discrete")]


@pytest.mark.slow
@pytest.mark.parametrize("name", SEARCHED_IN_CI)
def test_search_reproduces_the_table(name: str) -> None:
    stored = load_table()[name]
    fresh = search_problem(build_problem(name, with_optimum=False), targets=("var", "worst_case", "cvar"))
    for key in ("var", "worst_case", "cvar"):
        assert abs(fresh[key]["value"] - stored[key]["value"]) <= 1e-7


@pytest.mark.parametrize("name", NAMES)
def test_stored_values_are_attained_at_stored_maximizers(name: str) -> None:
    p = build_problem(name)
    tol = REPRODUCIBLE_TO.get(name, 1e-12)
    assert float(p.var(torch.tensor([p.optimum.argmax_var]))[0]) == pytest.approx(
        p.optimum.var, abs=tol)
    assert float(p.worst_case(torch.tensor([p.optimum.argmax_worst_case]))[0]) == pytest.approx(
        p.optimum.worst_case, abs=tol)
    assert float(p.cvar(torch.tensor([p.optimum.argmax_cvar]))[0]) == pytest.approx(
        p.optimum.cvar, abs=tol)
    # CVaR lies below VaR at every x, so its optimum does too
    assert p.optimum.cvar <= p.optimum.var + tol
    assert float(p.mean(torch.tensor([p.optimum.argmax_mean]))[0]) == pytest.approx(
        p.optimum.mean, abs=tol)


@pytest.mark.parametrize("name", GRID_SEARCHED)
def test_no_random_point_beats_the_stored_optimum(name: str) -> None:
    p = build_problem(name)
    x = torch.rand(RANDOM_POINTS.get(name, 100_000), p.d_x, generator=torch.Generator().manual_seed(7))
    # f on the support once per chunk, the three measures from it (as Problem.var, worst_case and
    # cvar compute them on a discrete Z), rather than f three times
    var, worst, cvar = [], [], []
    for chunk in x.split(10_000):
        values = p.support_values(chunk)  # chunk x |Dz|
        var.append(p.z.var(values, p.alpha))
        worst.append(values.min(dim=-1).values)
        cvar.append(weighted_cvar(values, p.z.masses, p.alpha))
    var, worst, cvar = torch.cat(var), torch.cat(worst), torch.cat(cvar)
    assert float(var.max()) <= p.optimum.var
    assert float(worst.max()) <= p.optimum.worst_case
    assert float(cvar.max()) <= p.optimum.cvar


def test_no_point_near_the_maximizer_beats_it() -> None:
    # a fine local scan (step 1e-8) around the stored maximizer, where a sloppy search would lose
    p = build_problem("branin-1-1-discrete")
    x0 = p.optimum.argmax_var[0]
    x = torch.linspace(x0 - 1e-5, x0 + 1e-5, 2001).unsqueeze(-1)
    assert float(p.var(x).max()) <= p.optimum.var + 1e-15


def test_alpha_below_the_smallest_mass_gives_the_worst_case_target() -> None:
    p = get_problem("branin-1-1-discrete", 1e-14)
    assert p.alpha == 1e-14
    assert p.optimum.var == p.optimum.worst_case == build_problem("branin-1-1-discrete").optimum.worst_case
    assert p.optimum.cvar == p.optimum.worst_case  # CVaR below the smallest mass: the minimum too


def test_other_alpha_is_searched() -> None:
    p = get_problem("branin-1-1-discrete", 0.3)
    x = torch.rand(20_000, 1, generator=torch.Generator().manual_seed(0))
    assert float(p.var(x).max()) <= p.optimum.var
    assert p.optimum.var > build_problem("branin-1-1-discrete").optimum.var  # VaR grows with alpha
    q = get_problem("branin-1-1-discrete", 0.3, "cvar")
    assert q.optimum.var is None and float(q.cvar(x).max()) <= q.optimum.cvar
    assert q.optimum.cvar > build_problem("branin-1-1-discrete").optimum.cvar  # so does CVaR


def test_cli_lists_every_problem_as_json() -> None:
    out = subprocess.run([sys.executable, "-m", "problems", "--json"], capture_output=True,
                         text=True, check=True).stdout
    rows = json.loads(out)
    assert [r["name"] for r in rows] == NAMES
    for r in rows:
        assert {"name", "d_x", "d_z", "alpha", "optimum_var", "argmax_var", "optimum_worst_case",
                "argmax_worst_case", "optimum_cvar", "argmax_cvar", "optimum_mean", "argmax_mean"} <= set(r)
        assert r["optimum_cvar"] is not None and r["optimum_mean"] is not None


def test_cli_rejects_unknown_names_in_one_line() -> None:
    run = subprocess.run([sys.executable, "-m", "problems", "--check-optima", "nope"],
                         capture_output=True, text=True)
    assert run.returncode == 2
    assert len(run.stderr.strip().splitlines()) == 1 and "nope" in run.stderr
