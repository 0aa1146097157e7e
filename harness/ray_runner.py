"""Run a list of cells as Ray tasks; the driver writes each finished cell at once, atomically.

* Each cell is a task with ``num_cpus=1`` that sets torch to one thread inside (Ray reuses worker
  processes and sets OMP_NUM_THREADS only when unset) and returns the rows, or the exception's
  message and traceback: an exception inside a cell never stops the grid.
* At most ``max_in_flight`` tasks are submitted at a time (by default twice the cluster's CPUs,
  counted again at every turn of the loop, so that an autoscaling cluster sees demand beyond what it
  has and grows), the most expensive first, so that the slow cells do not form the tail.
* A task never blocks on Ray (no ``ray.get`` or ``ray.wait`` inside): Ray lends the CPU of a
  blocked task to a queued one, and a cell that waited for its checkpoint that way let three cells
  run on two CPUs for ten minutes, slowing each and falsifying its timings. The driver hands each
  task its checkpoint as an argument, the task hands its new checkpoints to the keeper without
  waiting, and a task whose worker or node dies is resubmitted by the driver (up to
  :data:`SYSTEM_RETRIES` times) with the latest checkpoint the keeper holds.
* A ``ray.wait`` loop writes each finished cell (``harness.store``: temp name, then rename), so a
  cluster needs no shared filesystem, and a killed driver loses only the cells in flight.
* Ctrl-C cancels the tasks in flight and returns; nothing partial is left behind.
* A full disk or quota (``ENOSPC``, ``EDQUOT``: :func:`harness.store.disk_full`) at the first write
  it refuses (a finished cell, a failure record, a checkpoint, the progress file) stops the grid the
  same way: no cell is given out any more, the running ones are stopped (their files could not be
  written either; their checkpoints stored before are kept), and the outcome says so
  (:attr:`Outcome.disk_full`). Waiting for them would cost up to a cell's length for nothing.
* The driver never blocks on Ray without a time limit: every ``ray.get`` and ``ray.wait`` has a
  timeout, between whose slices the local Ray's GCS and raylet must still run
  (:func:`harness.local_ray.lost`), so that a dead local Ray is noticed within seconds
  (:class:`~harness.ray_session.RayLostError`) rather than waited on forever; the cluster's CPU
  count, which Ray answers from its GCS, is asked in a thread and cached
  (:class:`~harness.ray_session.CpuCount`). :func:`~harness.ray_session.stop_ray` shuts down the
  Ray that :func:`~harness.ray_session.start_ray` started within :data:`~harness.ray_session.STOP_S`,
  holding Ctrl-C and SIGTERM meanwhile, and a local Ray's processes all go with it
  (:mod:`harness.local_ray`).

This module submits and collects the tasks (:func:`run_cells`); Ray's start, stop and waits with a
time limit are :mod:`harness.ray_session`'s, the condensing of Ray's messages
:mod:`harness.ray_messages`'s, the ETA and the progress line's texts :mod:`harness.progress`'s, and
the driver's side of the checkpoint keeper :mod:`harness.keeper_driver`'s.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import ray
from tqdm import tqdm

import harness.interrupts as interrupts
import harness.kernels as kernels
import harness.local_ray as local_ray
import harness.spill as spill
from harness.cell import CellResult, CellSpec, checkpoint_iteration, resumed_iteration, run_cell, same_vendor
from harness.estimates import cell_iterations
from harness.grid_cells import cell_label
from harness.keeper_driver import Keeper
from harness.progress import Eta, format_eta, progress_text
from harness.ray_messages import RayMessages, condense_ray_message
from harness.ray_session import (
    ANSWER_S,
    INTERRUPTED_ANSWER_S,
    WAIT_SLICE_S,
    RayLostError,
    check_alive,
    cluster_cpus,
    get,
)
from harness.results import spec_hash
from harness.store import (
    DiskFullError,
    clear_checkpoint,
    clear_failure,
    clear_progress,
    disk_full,
    provenance,
    write_cell,
    write_failure,
    write_progress,
)


@dataclass
class Outcome:
    """What a run did: labels of the cells written, failed, and left unrun (interrupted)."""

    done: list[CellSpec] = field(default_factory=list)
    failed: list[CellSpec] = field(default_factory=list)
    unrun: list[CellSpec] = field(default_factory=list)
    stopped: list[CellSpec] = field(default_factory=list)  # running when a full disk stopped the grid
    resumed: dict[CellSpec, int] = field(default_factory=dict)  # cell -> iteration it resumed after
    retried: int = 0  # tasks resubmitted after their worker or node died
    interrupted: bool = False
    terminated: bool = False  # interrupted by SIGTERM rather than Ctrl-C
    disk_full: DiskFullError | None = None  # the write that found the disk full and stopped the grid
    wall_s: float = 0.0
    cell_s: float = 0.0  # sum of the cells' own wall times (inside the tasks)
    ray_start_s: float = 0.0


def _execute_cell(spec: CellSpec, cell_fn: Callable[..., CellResult], checkpoint: bytes | None = None,
                  keeper=None) -> dict:
    """The body of a task: one thread, the cell (resumed from ``checkpoint`` if given, handing new
    checkpoints to ``keeper`` if given, never waiting for it), and its result or its error (never
    raises)."""
    import torch

    # A terminal's Ctrl-C reaches every process of its group, local Ray workers included; the driver
    # decides what happens (it cancels its tasks with force), so a cell never dies of it half-way.
    with contextlib.suppress(ValueError):  # ValueError: not the main thread (async actors; not ours)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch.set_num_threads(1)
    start = time.perf_counter()
    resumed_at, restarted = None, None
    try:
        if keeper is None and checkpoint is None:
            result = cell_fn(spec)
        else:
            host = kernels.host_record() | {"vendor": kernels.cpu_vendor()}
            checkpoint, restarted = same_vendor(checkpoint, host["vendor"])
            if checkpoint is not None:
                resumed_at = checkpoint_iteration(checkpoint)

            key = spec_hash(spec)

            def save(data: bytes, t: int) -> None:  # fire and forget: a task must not block on Ray
                with contextlib.suppress(Exception):  # a lost keeper costs checkpoints, not the cell
                    keeper.save.remote(key, data, t)

            result = cell_fn(spec, checkpoint=checkpoint,
                             on_checkpoint=save if keeper is not None else None, host=host)
    except Exception as error:  # recorded, the grid goes on
        message = f"{type(error).__name__}: {error}".splitlines()[0] if str(error) else type(error).__name__
        return {"ok": False, "message": message, "traceback": traceback.format_exc(),
                "host": socket.gethostname(), "pid": os.getpid(),
                "seconds": time.perf_counter() - start}
    return {"ok": True, "result": result, "seconds": time.perf_counter() - start,
            "resumed_at": resumed_at, "restarted": restarted, "host": socket.gethostname(),
            "pid": os.getpid(), "host_record": kernels.host_record()}


#: Times the driver resubmits a cell whose worker process or node died (a spot node reclaimed, the
#: OOM killer), from its latest checkpoint. An exception inside a cell is not retried: the task
#: catches it and returns it as a failure.
SYSTEM_RETRIES = 2

# Ray's own retries would rerun the task with its original arguments, so from its first checkpoint:
# the driver resubmits instead, with the latest
_remote_cell = ray.remote(num_cpus=1, max_retries=0)(_execute_cell)


#: Seconds between progress lines when stderr is not a terminal.
LOG_EVERY_S = 15.0
#: Seconds between rewrites of ``_progress.json`` (``harness.status`` reads it).
PROGRESS_EVERY_S = 5.0
#: The progress file is rewritten at least this often while the grid runs (a heartbeat).
HEARTBEAT_S = 30.0
#: Running cells named on the progress line (all of them are in ``harness.status``).
PROGRESS_CELLS = 2


def run_cells(cells: list[CellSpec], out: Path, costs: list[float] | None = None,
              max_in_flight: int | None = None, cell_fn: Callable[..., CellResult] = run_cell,
              progress: bool = True, checkpoints: bool = True) -> Outcome:
    """Run ``cells`` on the Ray that is initialised, writing each one under ``out`` as it finishes.

    Args:
        cells: the cells to run (already filtered: none is finished or unavailable).
        out: results folder.
        costs: estimated seconds per cell (same order); the most expensive are submitted first and the ETA
            uses them. Default: all equal.
        max_in_flight: tasks submitted at once (default: twice the cluster's CPUs, counted anew at every turn
            of the loop).
        cell_fn: the cell function (tests substitute one; it must be importable by the workers and take
            run_cell's ``checkpoint`` and ``on_checkpoint`` arguments).
        progress: show a tqdm bar on stderr.
        checkpoints: keep checkpoints of running cells in ``out/_checkpoints`` (an actor on this node writes
            them), so that a cell whose worker or node dies, or a cell of a killed driver's grid, resumes from
            its last checkpoint instead of from the start.

    Returns:
        What the run did (:class:`Outcome`), the cells written, failed, left unrun or stopped, the retries,
        interruptions and times.
    """
    return _GridRun(cells, out, costs, max_in_flight, cell_fn, progress, checkpoints).run()


class _GridRun:
    """One call of :func:`run_cells` (same arguments): the queue, the tasks in flight, the
    checkpoint keeper, the ETA and the progress line, and the loop that drives them."""

    def __init__(self, cells: list[CellSpec], out: Path, costs: list[float] | None,
                 max_in_flight: int | None, cell_fn: Callable[..., CellResult], progress: bool,
                 checkpoints: bool) -> None:
        self.out, self.cell_fn, self.max_in_flight = out, cell_fn, max_in_flight
        self.outcome = Outcome()
        self.start = time.perf_counter()
        costs = list(costs) if costs is not None else [1.0] * len(cells)
        self.queue = [cells[i] for i in sorted(range(len(cells)), key=lambda i: -costs[i])]
        self.cpus = cluster_cpus()  # counted anew now and then: an autoscaling cluster grows (and shrinks)
        self.attempts: dict[CellSpec, int] = {}
        self.info = provenance()
        self.keeper = Keeper(cells, out, self.finished) if checkpoints else None
        self.total_iterations = {spec: cell_iterations(spec) for spec in cells if spec.kind == "bo"}
        self.iteration_of: dict[CellSpec, int] = {}  # running cells' last finished iteration
        # the vendor of the CPUs that run the cells where they are this host's (a local Ray); a cluster's
        # nodes are not known here, and their tasks say when they drop a checkpoint
        self.vendor = kernels.cpu_vendor() if local_ray.has_local_ray() else ""
        self.progress_written: tuple[float, object] = (0.0, None)  # when, and what
        self.in_flight: dict[ray.ObjectRef, CellSpec] = {}
        self.eta = Eta({cells[i]: costs[i] for i in range(len(cells))})
        self.interactive = sys.stderr.isatty()
        self.bar = tqdm(total=len(cells), unit="cell", disable=not progress or not cells, file=sys.stderr,
                        dynamic_ncols=True, mininterval=0.5 if self.interactive else 15.0,
                        bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]")
        self.last_line = time.perf_counter()

    def finished(self) -> set[CellSpec]:
        """The cells written or failed so far."""
        return set(self.outcome.done) | set(self.outcome.failed)

    def run(self) -> Outcome:
        """Turns of the loop until every cell is written or failed; Ctrl-C, SIGTERM or a full disk
        stops it (what the running cells reached is kept), a lost local Ray raises
        :class:`RayLostError`."""
        try:
            while self.queue or self.in_flight:
                self.turn()
            self.refresh()
        except KeyboardInterrupt as error:
            self.interrupted(error)
        except DiskFullError as error:
            self.stop_for_full_disk(error)
        except RayLostError:
            RayMessages.silent = True
            raise
        finally:
            self.bar.close()
            with contextlib.suppress(Exception):  # advisory: a store that refuses it costs nothing
                clear_progress(self.out)
        self.outcome.wall_s = time.perf_counter() - self.start
        return self.outcome

    def turn(self) -> None:
        """Submit up to the limit, wait up to a slice for a task, flush checkpoints, handle it."""
        check_alive()  # a dead GCS or raylet is noticed here within a turn, about a second
        self.cpus = cluster_cpus()
        while self.queue and len(self.in_flight) < (self.max_in_flight or 2 * self.cpus):
            self.submit(self.queue.pop(0))
        self.refresh()
        ready, _ = ray.wait(list(self.in_flight), num_returns=1, timeout=WAIT_SLICE_S)
        self.flush()
        for ref in ready:
            self.collect(ref)

    def submit(self, spec: CellSpec) -> None:
        """One task for ``spec``, with the latest checkpoint the keeper holds (the driver may block
        on Ray; a task must not)."""
        checkpoint = self.keeper.load(spec) if self.keeper is not None else None
        bo = spec in self.total_iterations
        resumes_after = resumed_iteration(checkpoint, self.vendor, spec) if bo else None
        if resumes_after is not None:
            self.iteration_of[spec] = resumes_after
            self.eta.resumes(spec, resumes_after / max(1, self.total_iterations[spec]))
        actor = self.keeper.actor if self.keeper is not None else None
        self.in_flight[_remote_cell.remote(spec, self.cell_fn, checkpoint, actor)] = spec

    def flush(self, patience_s: float = ANSWER_S) -> None:
        """Write the checkpoints the running cells made since the last flush and note their
        iterations (for the progress line, ``_progress.json`` and the ETA)."""
        if self.keeper is None:
            return
        for spec, iteration in self.keeper.write_new(patience_s).items():
            if spec in self.total_iterations and spec in self.in_flight.values():
                self.iteration_of[spec] = iteration
                self.eta.progress(spec, iteration / max(1, self.total_iterations[spec]))

    def collect(self, ref: ray.ObjectRef) -> None:
        """The finished task ``ref``: its cell written, failed, or (its worker died) queued again."""
        spec = self.in_flight.pop(ref)
        self.iteration_of.pop(spec, None)
        try:
            reply = get(ref, f"the result of {cell_label(spec)}")
        except RayLostError:
            raise
        except Exception as error:  # its worker or node died (the task catches the rest)
            message = f"{type(error).__name__}: {condense_ray_message(str(error))}"
            if self.retry(spec, message):
                return
            reply = {"ok": False, "message": message, "traceback": str(error), "seconds": None}
        self.outcome.cell_s += reply.get("seconds") or 0.0
        if reply["ok"]:
            reply = self.write(spec, reply)
        if reply["ok"]:
            self.done(spec, reply)
        else:
            self.failed(spec, reply)
        # only whole successful runs calibrate the cost model (a failure or a resumed cell ran part
        # of its work)
        whole = reply["ok"] and reply.get("resumed_at") is None
        self.eta.finished(spec, reply.get("seconds") if whole else None)
        self.bar.update(1)

    def retry(self, spec: CellSpec, message: str) -> bool:
        """Queue ``spec`` again first, from its latest checkpoint, unless it has had its
        :data:`SYSTEM_RETRIES`; whether it was."""
        self.attempts[spec] = self.attempts.get(spec, 0) + 1
        if self.attempts[spec] > SYSTEM_RETRIES:
            return False
        self.outcome.retried += 1
        self.flush()
        self.bar.write(f"retrying {cell_label(spec)} (attempt {self.attempts[spec] + 1}): {message}",
                       file=sys.stderr)
        self.queue.insert(0, spec)
        self.eta.requeued(spec)
        return True

    def write(self, spec: CellSpec, reply: dict) -> dict:
        """Write a successful task's cell, retrying a refused write (:mod:`harness.spill`); a store
        that still refuses the file (permissions, a refused upload) turns the reply into this cell's
        failure, and the cell is kept on this machine for the next run to write. A full disk raises
        :class:`DiskFullError` at once, the cell kept only on another disk (no failure record: the
        same command reruns it, unless it is kept)."""
        # per cell: where it ran, and after which iteration it resumed (None: whole)
        info = (self.info | {"host": reply.get("host"), "resumed_at": reply.get("resumed_at")}
                | reply.get("host_record", {}))
        try:
            spill.write_with_retries(lambda: write_cell(self.out, spec, reply["result"], info),
                                     attempts=spill.write_attempts(self.out))
        except Exception as error:
            full = disk_full(error)
            # a full disk: kept only on another one (the same disk would refuse it too)
            path, kept = (None, "") if full and spill.same_disk(self.out) else self.keep(spec, reply, info)
            if full:
                label = cell_label(spec)
                raise DiskFullError(f"the file of {label}", error, label, path) from error
            reason = str(error).strip().splitlines()[0] if str(error).strip() else ""
            return {**reply, "ok": False, "traceback": traceback.format_exc(),
                    "message": f"cannot write its result: {type(error).__name__}: {reason}{kept}"}
        return reply

    def keep(self, spec: CellSpec, reply: dict, info: dict) -> tuple[Path | None, str]:
        """Keep a finished cell that the store refused on this machine (:func:`spill.keep`): where,
        and the words its failure message ends with."""
        try:
            path = spill.keep(self.out, spec, lambda folder: write_cell(folder, spec, reply["result"], info))
        except Exception as again:  # a second fault: the rows are lost, and the line says so
            return None, f"; not kept either ({type(again).__name__}): its rows are lost"
        return path, f"; kept at {path}, which the same command writes into the results folder when it can"

    def done(self, spec: CellSpec, reply: dict) -> None:
        """A written cell: its stale failure record and checkpoint go, the keeper forgets it."""
        with contextlib.suppress(Exception):  # stale bookkeeping costs nothing
            clear_failure(self.out, spec)
            clear_checkpoint(self.out, spec)
        if self.keeper is not None:
            self.keeper.drop(spec)
        self.outcome.done.append(spec)
        if reply.get("resumed_at") is not None:
            self.outcome.resumed[spec] = reply["resumed_at"]
        if reply.get("restarted"):
            self.bar.write(f"{cell_label(spec)} ran from iteration 0, not from its checkpoint: "
                           f"{reply['restarted']} (a resume gives a whole run's bits on the same kind of CPU "
                           "only)", file=sys.stderr)

    def failed(self, spec: CellSpec, reply: dict) -> None:
        """A failed cell: its failure record (or, failing that, the message) and a line."""
        try:
            write_failure(self.out, spec, reply["message"], reply["traceback"],
                          {k: reply.get(k) for k in ("host", "pid", "seconds")}
                          | {"time": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
        except Exception as error:  # not even the record: the message is all there is
            if disk_full(error):  # nothing more can be written: the grid stops (the cell reruns)
                raise DiskFullError(f"the failure record of {cell_label(spec)}", error) from error
            self.bar.write(f"cannot write the failure record of {cell_label(spec)}: "
                           f"{type(error).__name__}: {error}", file=sys.stderr)
        self.outcome.failed.append(spec)
        self.bar.write(f"failed: {cell_label(spec)}: {reply['message']}", file=sys.stderr)

    def interrupted(self, error: KeyboardInterrupt) -> None:
        """Ctrl-C or SIGTERM: keep what the running cells reached, cancel their tasks, list the
        cells left unrun."""
        self.outcome.interrupted = True
        self.outcome.terminated = interrupts.exit_code(error) == interrupts.EXIT_SIGTERM
        # a second Ctrl-C or SIGTERM does not cut this short; each step has a time limit
        with interrupts.deferred(raise_after=False):
            if local_ray.lost() is None:
                with contextlib.suppress(Exception):  # keep what the interrupted cells reached
                    self.flush(INTERRUPTED_ANSWER_S)
                for ref in self.in_flight:
                    with contextlib.suppress(Exception):  # Ray itself may be going down with the same Ctrl-C
                        ray.cancel(ref, force=True)
        self.outcome.unrun = list(self.in_flight.values()) + self.queue

    def stop_for_full_disk(self, error: DiskFullError) -> None:
        """A full disk or quota: say so at once, give out no more cells and stop the running ones
        (their files and checkpoints could not be written either: the checkpoints stored before
        are kept, and the same command resumes them from there)."""
        self.outcome.disk_full = error
        running = min(len(self.in_flight), self.cpus)  # the rest wait in Ray's queue, in order
        self.outcome.stopped = list(self.in_flight.values())[:running]
        self.bar.write(f"harness.run: error: {self.out} is full: {error}; no more cells are given out, "
                       f"{running} running cell(s) stopped", file=sys.stderr)
        if local_ray.lost() is None:
            for ref in self.in_flight:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
        self.outcome.unrun = list(self.in_flight.values()) + self.queue

    def refresh(self) -> None:
        """The progress line (running cells and their iterations, failures, cells left, ETA) and
        ``_progress.json``."""
        now = time.perf_counter()
        running = min(len(self.in_flight), self.cpus)  # the rest of the in-flight tasks wait in Ray's queue
        started = list(self.in_flight.values())[:running]  # Ray starts them in submission order
        self.eta.running(started, now)
        cells_text = ", ".join(progress_text(spec, self.iteration_of.get(spec), self.total_iterations[spec])
                               for spec in started[:PROGRESS_CELLS] if spec in self.total_iterations)
        if running > PROGRESS_CELLS:
            cells_text += f", +{running - PROGRESS_CELLS} more"
        self.bar.set_postfix_str(f"running {running}" + (f" ({cells_text})" if cells_text else "")
                                 + f", failed {len(self.outcome.failed)}, "
                                 f"remaining {len(self.queue) + len(self.in_flight) - running}, "
                                 f"ETA {format_eta(self.eta.seconds(now, self.cpus))}",
                                 refresh=self.interactive)
        self.write_running()
        # not on a terminal (a log, `ray job logs`): a line every LOG_EVERY_S even while no cell ends
        if not self.interactive and time.perf_counter() - self.last_line >= LOG_EVERY_S:
            self.bar.refresh()
            self.last_line = time.perf_counter()

    def write_running(self) -> None:
        """``_progress.json``: the running cells' iterations, for ``harness.status`` (at most every
        PROGRESS_EVERY_S, and only when they changed; a store that refuses it costs nothing)."""
        now = time.perf_counter()
        started = self.eta.started
        running = [{"cell": cell_label(spec), "iteration": self.iteration_of.get(spec),
                    "iterations": self.total_iterations[spec],
                    "seconds": round(now - started[spec], 1) if spec in started else None}
                   for spec in list(self.in_flight.values())[:self.cpus] if spec in self.total_iterations]
        state = [(r["cell"], r["iteration"]) for r in running]
        since = now - self.progress_written[0]
        # rewritten when the cells moved (at most every PROGRESS_EVERY_S), and at least every
        # HEARTBEAT_S whatever they did: its age then tells a hung driver from a busy one
        if since < PROGRESS_EVERY_S or (state == self.progress_written[1] and since < HEARTBEAT_S):
            return
        try:
            write_progress(self.out, running)
            self.progress_written = (now, state)
        except Exception as error:  # advisory, unless the disk is full: then the grid stops
            if disk_full(error):
                raise DiskFullError("the progress file", error) from error
