"""The driver's side of the checkpoint keeper (:class:`Keeper`): it starts the keeper's actor
(:class:`harness.keeper.CheckpointKeeper`) on the driver's node, preloaded with the stored
checkpoints, replaces it when it dies, and writes the checkpoints the running cells handed it to the
results store.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from harness.cell import checkpoint_problem
from harness.grid_cells import cell_label
from harness.keeper import CheckpointKeeper
from harness.ray_session import ANSWER_S, check_alive, get
from harness.results import spec_hash
from harness.spec import CellSpec
from harness.store import (
    DiskFullError,
    disk_full,
    read_checkpoint,
    set_aside_checkpoint,
    write_checkpoint,
)

#: The name prefix of the checkpoint keeper actor (``<prefix>-<random hex>``).
KEEPER_NAME = "varbo-checkpoint-keeper"

_remote_keeper = ray.remote(num_cpus=0)(CheckpointKeeper)


class Keeper:
    """The driver's side of the checkpoint keeper (:class:`harness.keeper.CheckpointKeeper`): it
    starts the actor preloaded with the stored checkpoints, replaces it when it dies, and writes the
    checkpoints it collected to the store.

    Args:
        cells: the grid's cells (those not finished are preloaded).
        out: results folder.
        finished: the cells finished so far (a new keeper preloads none of theirs).
    """

    def __init__(self, cells: list[CellSpec], out: Path, finished: Callable[[], set[CellSpec]]) -> None:
        self.cells, self.out, self.finished = cells, out, finished
        self.by_key = {spec_hash(spec): spec for spec in cells}  # the keeper's keys, back to cells
        self.here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        self.unsaved: set[CellSpec] = set()  # cells whose checkpoint could not be written (said once)
        self.actor = self._start(set())

    def _start(self, finished: set[CellSpec]) -> object:
        """A checkpoint keeper on this node (it lives as long as the driver, whatever happens to
        workers), preloaded with the stored checkpoints of the cells not finished yet; a stored
        checkpoint that cannot be read is set aside and its cell starts afresh."""
        # named, so that a test can find and kill it as the OOM killer or an operator might
        # (unique: an earlier grid's keeper in this process may not be collected yet)
        fresh = _remote_keeper.options(scheduling_strategy=self.here,
                                       name=f"{KEEPER_NAME}-{uuid.uuid4().hex}").remote()
        for spec in self.cells:
            if spec in finished:
                continue
            data = read_checkpoint(self.out, spec)
            problem = None if data is None else checkpoint_problem(data, spec)
            if problem is not None:  # never resume from it; keep it for a look; start the cell afresh
                aside = set_aside_checkpoint(self.out, spec)
                print(f"checkpoint of {cell_label(spec)} cannot be read ({problem}): set aside as {aside}; "
                      "the cell restarts from iteration 0", file=sys.stderr)
            elif data is not None:
                fresh.put.remote(spec_hash(spec), data)
        return fresh

    def load(self, spec: CellSpec) -> bytes | None:
        """The latest checkpoint of ``spec`` the keeper holds.

        Args:
            spec: the cell.

        Returns:
            The checkpoint's bytes, or None (start afresh).
        """
        return self.call("load", spec_hash(spec))

    def drop(self, spec: CellSpec) -> None:
        """Forget a written cell (not awaited: a lost keeper has forgotten it anyway)."""
        self.actor.drop.remote(spec_hash(spec))

    def call(self, method: str, *args: object, patience_s: float = ANSWER_S) -> object:
        """:func:`get` of a keeper call.

        A dead keeper is replaced by a new one (from the stored checkpoints: the running cells' newer ones
        that were not flushed yet are lost) and the call is made again on it, unless the local Ray itself is
        gone (:class:`RayLostError`).

        Args:
            method: the name of the keeper's method.
            *args: its arguments.
            patience_s: how long to wait for the answer.

        Returns:
            The method's answer.
        """
        try:
            return get(getattr(self.actor, method).remote(*args), f"the checkpoint keeper's {method}",
                       patience_s)
        except ray.exceptions.RayActorError as error:
            check_alive()  # a keeper that died with its raylet: no new one on a dead node
            print(f"the checkpoint keeper died ({type(error).__name__}); a new one takes over from the "
                  "stored checkpoints; cells already running keep going without checkpoints",
                  file=sys.stderr)
            self.actor = self._start(self.finished())
            return get(getattr(self.actor, method).remote(*args), f"the checkpoint keeper's {method}",
                       patience_s)

    def write_new(self, patience_s: float = ANSWER_S) -> dict[CellSpec, int]:
        """Write the checkpoints the running cells made since the last call.

        A checkpoint that cannot be written costs that cell its resume point, said once, never the grid,
        unless the disk is full.

        Args:
            patience_s: how long to wait for the keeper's answer.

        Returns:
            Each running cell -> its last finished iteration.

        Raises:
            DiskFullError: the disk is full (:class:`~harness.store.DiskFullError`).
        """
        taken, progress = self.call("take", patience_s=patience_s)
        for key, data in taken.items():
            spec = self.by_key[key]
            try:
                write_checkpoint(self.out, spec, data)
            except Exception as error:
                if disk_full(error):  # every later write would be refused too: the grid stops
                    raise DiskFullError(f"the checkpoint of {cell_label(spec)}", error) from error
                if spec not in self.unsaved:
                    self.unsaved.add(spec)
                    print(f"cannot write the checkpoint of {cell_label(spec)} ({type(error).__name__}: "
                          f"{error}); it runs on without one", file=sys.stderr)
        return {self.by_key[key]: iteration for key, iteration in progress.items()}
