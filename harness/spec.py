"""A cell's identity and its result: :class:`CellSpec` (everything that determines a cell's rows)
and :class:`CellResult` (the rows and the metadata). Plain data, imported by every part of the
harness; :mod:`harness.cell` runs a BO cell, :mod:`harness.complexity` a timing cell."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from algorithms.gp import DEFAULT_GP, gp_profile
from problems.measures import DEFAULT_RISK, RISKS

#: What a cell can be: a BO run, or a timing cell of the complexity study.
CELL_KINDS = ("bo", "timing")
# RISKS: the risk measures a BO cell can optimize (``"var"`` the default): VaR_alpha, or CVaR_alpha
# (the lower-tail mean, :func:`problems.weighted_cvar`); the algorithms' list, re-exported here.


@dataclass(frozen=True)
class CellSpec:
    """Everything that determines a cell's rows.

    Attributes:
        problem, algorithm: registry names.
        seed: run index (>= 0); with the problem it fixes the initial design and the noise.
        iterations: BO iterations after the initial design (default: the problem's).
        alpha: risk level (default: the problem's).
        options: algorithm options, as sorted (name, value) pairs so the spec stays hashable.
        kind: ``"bo"`` (a BO run, :func:`run_cell`) or ``"timing"`` (a timing cell of the
            complexity study, :func:`harness.complexity.run_timing_cell`; its options also hold
            the controlled state).
        gp: the GP profile (:data:`algorithms.gp.GP_PROFILES`), :data:`algorithms.gp.DEFAULT_GP` by
            default.
        risk: the risk measure the cell optimizes and is scored on (:data:`RISKS`), ``"var"`` by
            default.
        n_init: the initial design's size (default: the problem's ``n_init``), where a study runs a
            problem with its source's design rather than the problem's.
    """

    problem: str
    algorithm: str
    seed: int
    iterations: int | None = None
    alpha: float | None = None
    options: tuple[tuple[str, object], ...] = field(default_factory=tuple)
    kind: str = "bo"
    gp: str = DEFAULT_GP
    risk: str = DEFAULT_RISK
    n_init: int | None = None

    def to_dict(self) -> dict:
        """The spec as plain data.

        ``kind`` is left out when it is ``"bo"``, ``gp``, ``risk`` and ``n_init`` when they are the defaults,
        so that cells keep the identity (and hash) they had before timing cells, GP profiles, risk measures
        and initial designs of a spec's own existed.

        Returns:
            The fields by name, ``options`` as a list of (name, value) pairs, without those left out.
        """
        data = asdict(self)
        if self.kind == "bo":
            del data["kind"]
        if self.gp == DEFAULT_GP:
            del data["gp"]
        if self.risk == DEFAULT_RISK:
            del data["risk"]
        if self.n_init is None:
            del data["n_init"]
        return data

    def to_json(self) -> str:
        """Canonical JSON: equal specs give equal strings (the cell's identity in the store).

        Returns:
            The JSON of :meth:`to_dict`, keys sorted, without spaces.
        """
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @staticmethod
    def make(problem: str, algorithm: str, seed: int, iterations: int | None = None,
             alpha: float | None = None, options: dict | None = None, kind: str = "bo",
             gp: str = DEFAULT_GP, risk: str = DEFAULT_RISK, n_init: int | None = None) -> CellSpec:
        """A checked spec, its options sorted by name.

        Args:
            problem: the problem's name or import path.
            algorithm: the algorithm's name or import path.
            seed: the seed.
            iterations: the BO iterations (None: the problem's own).
            alpha: the risk level (None: the problem's own).
            options: the algorithm's options.
            kind: the cell's kind, one of :data:`CELL_KINDS`.
            gp: the GP profile.
            risk: the risk measure, one of :data:`problems.measures.RISKS`.
            n_init: the initial design's size (None: the problem's own).

        Returns:
            The spec.

        Raises:
            ValueError: an unknown kind, risk measure or GP profile, or an ``n_init`` that is not a positive
                integer.
        """
        if kind not in CELL_KINDS:
            raise ValueError(f"unknown cell kind {kind!r}; valid: {', '.join(CELL_KINDS)}")
        if risk not in RISKS:
            raise ValueError(f"unknown risk measure {risk!r}; valid: {', '.join(RISKS)}")
        gp_profile(gp)  # ValueError if unknown
        if n_init is not None and (isinstance(n_init, bool) or not isinstance(n_init, int) or n_init < 1):
            raise ValueError(f"n_init must be a positive integer, got {n_init!r}")
        return CellSpec(problem, algorithm, seed, iterations, alpha,
                        tuple(sorted((options or {}).items())), kind, gp, risk, n_init)


@dataclass
class CellResult:
    """The rows of a cell (one dict per iteration) and its metadata."""

    rows: list[dict]
    metadata: dict
