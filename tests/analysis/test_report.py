"""The report on a small real results folder: files exist, numbers match the stored rows, loud failures."""

import copy
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from analysis.report import main
from harness.cell import CellSpec, run_cell
from harness.grid_cells import alpha_below_min_mass
from harness.results import cell_path, result_files
from harness.status import status_table
from harness.store import write_cell, write_manifest

PROBLEM = "branin-1-1-discrete"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real cells: V-UCB Unif/Prob at the default alpha, StableOpt and V-UCB Unif at alpha -> 0,
    random search as an extra algorithm; 2 seeds x 2 iterations; one planned cell never run."""
    out = tmp_path_factory.mktemp("results")
    a0 = alpha_below_min_mass(PROBLEM)
    specs = [CellSpec.make(PROBLEM, alg, seed, 2) for alg in ("vucb-unif", "vucb-prob", "random")
             for seed in (0, 1)]
    specs += [CellSpec.make(PROBLEM, alg, seed, 2, a0) for alg in ("stableopt", "vucb-unif")
              for seed in (0, 1)]
    planned = [*specs, CellSpec.make(PROBLEM, "vucb-prob", 2, 2)]
    write_manifest(out, "test", planned)
    for spec in specs:
        write_cell(out, spec, run_cell(spec))
    return out


def _stored_rows(results: Path) -> pd.DataFrame:
    """The regret column of every cell file, read with pyarrow directly (not through harness/analysis)."""
    frames = []
    for path in result_files(results):
        table = pq.read_table(path, columns=["algorithm", "alpha", "target", "seed", "iteration", "regret"])
        frames.append(table.to_pandas())
    return pd.concat(frames, ignore_index=True)


def test_report_files_and_numbers(results: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    assert main([str(results), "--out", str(out), "--study", "nguyen2021"]) == 0
    for name in ("report.md", "report.html", "bands.csv", "bands.parquet", "timing.csv", "timing_ratio.csv",
                 "claims.csv", "claims_overall.csv", "final_regret.csv", "final_table.csv"):
        assert (out / name).is_file(), name
    for stem in ("fig3_discrete", "fig_alpha0", "fig_timing"):
        assert (out / f"{stem}.png").stat().st_size > 1000 and (out / f"{stem}.pdf").is_file()
    # Figures 4 and 5: the folder's grid plans none of their problems, so they are not drawn
    assert not (out / "fig4_continuous.png").exists() and not (out / "fig5_simulated.png").exists()
    html = (out / "report.html").read_text()
    # embedded: the figures with cells (Figure 3, the worst-case figure, timing), before the claims
    assert html.count("data:image/png;base64,") == 3 and "<img src=\"fig" not in html
    assert "No cell of this folder belongs to" not in html
    # without a grid record, the paper's figures are drawn all the same (empty panels) and named
    bare = tmp_path / "bare"
    shutil.copytree(results, bare)
    (bare / "_grid.json").unlink()
    assert main([str(bare), "--out", str(tmp_path / "bare-report"), "--study", "nguyen2021"]) == 0
    assert (tmp_path / "bare-report" / "fig5_simulated.png").stat().st_size > 1000
    assert "No cell of this folder belongs to Figure 4: continuous Z; Figure 5" in (
        tmp_path / "bare-report" / "report.html").read_text()
    assert html.index("data:image/png") < html.index('<h2 id="claims">')
    assert '<a href="#regret-curves">Regret curves</a>' in html and '<h2 id="regret-curves">' in html
    assert "[Claims in detail](#claims-in-detail)" in (out / "report.md").read_text()
    # one regret and one timing table per target in the folder, each series' last iteration
    final = pd.read_csv(out / "final_table.csv")
    assert (final["iteration"] == final["iterations"]).all()
    for target in final["target"].unique():
        assert f"#### Target {target}: final log10 regret" in (out / "report.md").read_text()

    bands = pd.read_parquet(out / "bands.parquet")
    pd.testing.assert_frame_equal(bands.reset_index(drop=True),
                                  pd.read_csv(out / "bands.csv").astype(bands.dtypes.to_dict()),
                                  check_exact=False, rtol=1e-9)
    rows = _stored_rows(results)
    assert len(bands) == rows.groupby(["algorithm", "alpha", "target", "iteration"]).ngroups
    for band in bands.itertuples():
        mine = ((rows.algorithm == band.algorithm) & (rows.alpha == band.alpha) & (rows.target == band.target)
                & (rows.iteration == band.iteration))
        values = rows.loc[mine, "regret"].to_numpy()
        logs = np.log10(np.maximum(values, 1e-9))
        # two seeds: t with 1 degree of freedom is the Cauchy law, t_{0.85, 1} = tan(0.35 pi)
        half = np.tan(0.35 * np.pi) * logs.std(ddof=1) / np.sqrt(2)
        assert band.n_seeds == 2 and band.n_floor == int((values <= 1e-9).sum())
        assert band.mean == pytest.approx(logs.mean(), abs=1e-12)
        assert band.upper == pytest.approx(logs.mean() + half, rel=1e-9, abs=1e-12)
        assert band.lower == pytest.approx(logs.mean() - half, rel=1e-9, abs=1e-12)

    timing = pd.read_csv(out / "timing.csv")
    for series in timing.itertuples():
        files = [p for p in result_files(results) if f"/{series.algorithm}/" in str(p)]
        columns = ["alpha", "iteration", "t_acq_s"]
        stored = pd.concat([pq.read_table(p, columns=columns).to_pandas() for p in files])
        acq = stored.loc[(stored.alpha == series.alpha) & (stored.iteration >= 1), "t_acq_s"].to_numpy()
        assert series.acq_s_median == pytest.approx(np.median(acq), rel=1e-9)

    claims = pd.read_csv(out / "claims.csv")
    c7 = claims.loc[(claims.claim == "C7") & (claims.problem == PROBLEM)
                    & (claims.comparison == "vucb-unif vs stableopt")]
    assert c7["n_seeds"].tolist() == [2] and c7["verdict"].iloc[0] in {"inconclusive", "not reproduced"}
    assert set(claims.loc[claims.claim.isin(["C4", "C5"]), "verdict"]) == {"not run"}
    report = (out / "report.md").read_text()
    assert "random" in report  # an extra algorithm is drawn, not dropped
    missing = "| branin-1-1-discrete | vucb-prob | var | default | 2 | not run yet | 1 | 2 |"
    assert missing in report  # the planned cell never run


def test_negative_regret_stops_the_report(results: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture) -> None:
    broken = tmp_path / "broken"
    path = next(p for p in result_files(results) if "vucb-prob" in str(p))
    target = broken / path.relative_to(results)
    target.parent.mkdir(parents=True)
    table = pq.read_table(path)
    regret = table.column("regret").to_numpy().copy()
    regret[1] = -1e-6
    table = table.set_column(table.schema.get_field_index("regret"), "regret", pa.array(regret))
    # a cell file as a wrong optimum would have written it: its checksum matches its values
    from harness.results import table_checksum

    meta = json.loads(table.schema.metadata[b"varbo"])
    meta["checksum"] = table_checksum(table)
    pq.write_table(table.replace_schema_metadata({"varbo": json.dumps(meta)}), target)
    assert json.loads(pq.read_schema(target).metadata[b"varbo"])["spec"]["algorithm"] == "vucb-prob"
    assert main([str(broken), "--out", str(tmp_path / "report")]) == 1
    error = capsys.readouterr().err
    assert "regret below -1e-09" in error and f"{PROBLEM}/vucb-prob/seed" in error
    assert "at iteration 1" in error
    assert not (tmp_path / "report" / "report.html").exists()


def test_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main([str(tmp_path / "nowhere")]) == 2
    assert main([str(tmp_path)]) == 2  # no finished cells
    assert main([str(tmp_path), "--with", str(tmp_path / "gone"), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.count("analysis.report: error:") == 3
    assert f"{tmp_path / 'gone'} is not a folder" in err and not (tmp_path / "r").exists()


def test_a_results_folder_the_report_cannot_write_into_is_one_line(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture) -> None:
    import os

    from harness.store import write_cell

    spec = CellSpec.make("branin-1-1-discrete", "random", 0, 1)
    results = tmp_path / "results"
    write_cell(results, spec, run_cell(spec))
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the report folder would go")
    code = main([str(results), "--out", str(blocked / "report")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "cannot write the report" in err
    if os.geteuid() != 0:  # root writes anywhere: the permission case needs an ordinary user
        results.chmod(0o555)
        try:
            assert main([str(results)]) == 2
            assert "--out DIR" in capsys.readouterr().err
        finally:
            results.chmod(0o755)


def test_a_cell_stored_under_two_specs_counts_once(tmp_path: Path) -> None:
    """A cell run alone without T (its spec leaves T unset) and the grid's cell with T set: two
    hashes, the same run. The report counts the seed once and names the pair; rows that differ stop
    it with exit 1."""
    out = tmp_path / "results"
    alone = CellSpec.make(PROBLEM, "random", 0)  # T unset: the problem's 60
    grid = CellSpec.make(PROBLEM, "random", 0, 60)
    other = CellSpec.make(PROBLEM, "random", 1, 60)
    results = {spec: run_cell(spec) for spec in (alone, grid, other)}
    for spec, result in results.items():
        write_cell(out, spec, result)
    assert len(result_files(out)) == 3
    report = tmp_path / "report"
    assert main([str(out), "--out", str(report)]) == 0
    bands = pd.read_csv(report / "bands.csv")
    assert set(bands["n_seeds"]) == {2}  # seeds 0 and 1, not 0 twice
    text = (report / "report.md").read_text()
    hashes = [cell_path(out, spec).stem.rsplit("-", 1)[-1] for spec in (grid, alone)]
    assert "### Cells stored twice" in text
    assert f"| {hashes[0]} | {hashes[1]} |" in text  # kept: the grid's (T set); dropped: the lone run's
    # the same keys with different rows (another code version, say): which counts is the user's call
    changed = copy.deepcopy(results[alone])
    changed.rows[5]["y"] += 1.0
    write_cell(out, alone, changed)
    assert main([str(out), "--out", str(report)]) == 1


def test_a_cvar_cell_and_its_var_twin_are_two_cells(tmp_path: Path) -> None:
    """Same problem, algorithm, options and seed, two risk measures: two cells (two files, two
    targets), not one, in the report's first line, its table of missing cells and
    ``harness.status``'s table."""
    out = tmp_path / "results"
    specs = [CellSpec.make(PROBLEM, "random", seed, 2, risk=risk)
             for risk in ("var", "cvar") for seed in (0, 1)]
    missing = CellSpec.make(PROBLEM, "random", 2, 2, risk="cvar")
    write_manifest(out, "test", [*specs, missing])
    for spec in specs:
        write_cell(out, spec, run_cell(spec))
    status = {(r["risk"], r["alpha"]): r for r in status_table(out)}
    assert len(status) == 2 and status["var", "default"]["done"] == 2
    assert (status["cvar", "default"]["done"], status["cvar", "default"]["missing"]) == (2, 1)
    report = tmp_path / "report"
    assert main([str(out), "--out", str(report)]) == 0
    rows = _stored_rows(out)
    assert len(rows) == 4 * 3 and set(rows["target"]) == {"var", "cvar"}
    text = (report / "report.md").read_text()
    assert text.count(f"4 cells ({len(rows)} rows) from {out}.") == 1
    assert "| branin-1-1-discrete | random | cvar | default | 2 | not run yet | 1 | 2 |" in text


def test_results_of_no_study_get_no_claims_and_the_study_is_found_by_name_or_path(
        results: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "plain"
    assert main([str(results), "--out", str(out)]) == 0  # grid "test": no study declares it
    assert pd.read_csv(out / "claims_overall.csv").empty
    assert "belong to no study" in (out / "report.md").read_text()
    by_path = tmp_path / "by-path"
    assert main([str(results), "--out", str(by_path), "--study", "studies.nguyen2021.study:STUDY"]) == 0
    assert list(pd.read_csv(by_path / "claims_overall.csv")["claim"]) == [f"C{i}" for i in range(1, 10)]
    capsys.readouterr()
    missing = tmp_path / "never"
    assert main([str(results), "--out", str(missing), "--study", "nguyen2022"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown study 'nguyen2022'; installed: nguyen2021" in err
    assert not missing.exists()  # refused before anything is written


def test_report_csvs_round_values_to_10_digits_but_keep_keys_exact() -> None:
    from analysis.report_output import csv_ready as _csv_ready
    alpha = 2.6e-17 * (1 + 2 ** -50)  # an alpha -> 0 level that 10 digits would not join back
    table = pd.DataFrame({"alpha": [alpha], "mean": [1 / 3], "n_seeds": [10]})
    out = _csv_ready(table)
    assert out["alpha"].iloc[0] == alpha
    assert out["mean"].iloc[0] == 0.3333333333 and out["n_seeds"].iloc[0] == 10
    assert table["mean"].iloc[0] == 1 / 3  # the caller's table is left as it was
