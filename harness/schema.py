"""The fixed schemas of the cell files: every BO cell file has the columns of :data:`ROW_SCHEMA` with
the same types whatever the algorithm (so a folder of them reads as one table without type-merge
errors), older files one of :data:`OLDER_ROW_SCHEMAS` (read with the newer columns null), and every
timing-cell file those of :data:`TIMING_SCHEMA`. Read by :mod:`harness.results`, written by
:mod:`harness.store`.
"""

from __future__ import annotations

import pyarrow as pa

_float_list = pa.list_(pa.float64())

#: Column name -> type of every row of every cell file.
ROW_SCHEMA = pa.schema([
    ("problem", pa.string()),
    ("algorithm", pa.string()),
    ("seed", pa.int64()),
    ("iteration", pa.int64()),
    ("alpha", pa.float64()),
    ("target", pa.string()),  # "var", "cvar" or "worst_case": which optimum the regret is against
    ("optimum", pa.float64()),
    ("x", _float_list),
    ("z", _float_list),
    ("y", pa.float64()),
    ("x_rec", _float_list),
    ("var_rec", pa.float64()),  # true VaR_alpha(f(x_rec, Z))
    ("worst_rec", pa.float64()),  # true min_z f(x_rec, z)
    ("regret", pa.float64()),  # optimum - (var_rec, cvar_rec or worst_rec), never clipped
    ("x_rec_theory", _float_list),  # x_{t*}, t* = argmax_t VaR(l_{t-1}(x_t, Z))
    ("regret_theory", pa.float64()),
    ("var_mean_rec", pa.float64()),  # the model's estimate at x_rec of the cell's risk measure (VaR or CVaR)
    ("beta", pa.float64()),
    ("lv_count", pa.int64()),
    ("var_upper", pa.float64()),
    ("var_lower", pa.float64()),
    ("n_obs", pa.int64()),
    ("fit_refit", pa.bool_()),
    ("fit_ok", pa.bool_()),
    ("fit_message", pa.string()),
    ("t_fit_s", pa.float64()),
    ("t_acq_s", pa.float64()),
    ("t_rec_s", pa.float64()),
    ("t_eval_s", pa.float64()),
])
#: A row's timings in seconds (the model update, the proposal, the recommendation, the evaluation of
#: f), whose sum is the iteration's compute time.
TIMINGS = ("t_fit_s", "t_acq_s", "t_rec_s", "t_eval_s")
#: Files written before the GP's hyperparameters were stored: read with the ``gp_*`` columns null.
ROW_SCHEMA_V1 = ROW_SCHEMA
#: The fitted hyperparameters after each iteration's model update (:func:`algorithms.gp.hyperparameters`).
ROW_SCHEMA_V2 = ROW_SCHEMA_V1.append(pa.field("gp_lengthscale", _float_list)).append(
    pa.field("gp_outputscale", pa.float64())).append(pa.field("gp_noise", pa.float64())).append(
    pa.field("gp_mean", pa.float64()))
#: The proposal's whole ``info`` as JSON text (null at iteration 0; older files read it as null).
ROW_SCHEMA_V3 = ROW_SCHEMA_V2.append(pa.field("info", pa.string()))
#: The true CVaR_alpha(f(x_rec, Z)) of the recommendation: set in the cells that optimize CVaR
#: (``risk = "cvar"``), null in the others (and in older files).
ROW_SCHEMA_V4 = ROW_SCHEMA_V3.append(pa.field("cvar_rec", pa.float64()))
#: The true E_Z[f(x_rec, Z)] of the recommendation: set in the cells that optimize the expectation
#: (``risk = "mean"``), null in the others (and in older files).
ROW_SCHEMA = ROW_SCHEMA_V4.append(pa.field("mean_rec", pa.float64()))
#: Older BO schemas, newest first: each is a prefix of the current one, read with the rest null.
OLDER_ROW_SCHEMAS = (ROW_SCHEMA_V4, ROW_SCHEMA_V3, ROW_SCHEMA_V2, ROW_SCHEMA_V1)

#: Column name -> type of every row of every timing-cell file (one row per timed call).
TIMING_SCHEMA = pa.schema([
    ("problem", pa.string()),
    ("algorithm", pa.string()),
    ("seed", pa.int64()),
    ("n_obs", pa.int64()),  # |D|
    ("n_z", pa.int64()),  # |Dz|: support size (discrete Z) or samples of Z per estimate
    ("z_kind", pa.string()),  # "discrete" or "continuous"
    ("what", pa.string()),  # "fit" or "acquisition"
    ("repeat", pa.int64()),  # 1..repeats (the warm-up call is not stored)
    ("seconds", pa.float64()),  # wall clock
    ("cpu_seconds", pa.float64()),  # process CPU time
    ("threads", pa.int64()),  # torch threads (1)
])

#: The schema of each kind of cell file.
SCHEMAS = {"bo": ROW_SCHEMA, "timing": TIMING_SCHEMA}
#: Every schema a readable file of each kind may have (the current one first).
READABLE_SCHEMAS = {"bo": (ROW_SCHEMA, *OLDER_ROW_SCHEMAS), "timing": (TIMING_SCHEMA,)}
