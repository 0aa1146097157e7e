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
* The driver never blocks on Ray without a time limit: every ``ray.get`` and ``ray.wait`` has a
  timeout, between whose slices the local Ray's GCS and raylet must still run
  (:func:`harness.local_ray.lost`), so that a dead local Ray is noticed within seconds
  (:class:`RayLostError`) rather than waited on forever; the cluster's CPU count, which Ray answers from
  its GCS, is asked in a thread and cached (:class:`CpuCount`). :func:`stop_ray` shuts down the
  Ray that :func:`start_ray` started within :data:`STOP_S`, holding Ctrl-C and SIGTERM meanwhile,
  and a local Ray's processes all go with it (:mod:`harness.local_ray`).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import signal
import socket
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
from tqdm import tqdm

import harness.interrupts as interrupts
import harness.kernels as kernels
import harness.local_ray as local_ray
from harness.cell import CellResult, CellSpec, checkpoint_iteration, checkpoint_problem, run_cell
from harness.grid import cell_iterations, cell_label
from harness.keeper import CheckpointKeeper
from harness.results import spec_hash
from harness.store import (
    clear_checkpoint,
    clear_failure,
    clear_progress,
    provenance,
    read_checkpoint,
    set_aside_checkpoint,
    write_cell,
    write_checkpoint,
    write_failure,
    write_progress,
)


@dataclass
class Outcome:
    """What a run did: labels of the cells written, failed, and left unrun (interrupted)."""

    done: list[CellSpec] = field(default_factory=list)
    failed: list[CellSpec] = field(default_factory=list)
    unrun: list[CellSpec] = field(default_factory=list)
    resumed: dict[CellSpec, int] = field(default_factory=dict)  # cell -> iteration it resumed after
    retried: int = 0  # tasks resubmitted after their worker or node died
    interrupted: bool = False
    terminated: bool = False  # interrupted by SIGTERM rather than Ctrl-C
    wall_s: float = 0.0
    cell_s: float = 0.0  # sum of the cells' own wall times (inside the tasks)
    ray_start_s: float = 0.0


#: The name prefix of the checkpoint keeper actor (``<prefix>-<random hex>``).
KEEPER_NAME = "varbo-checkpoint-keeper"


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
    resumed_at = None
    try:
        if keeper is None and checkpoint is None:
            result = cell_fn(spec)
        else:
            if checkpoint is not None:
                resumed_at = checkpoint_iteration(checkpoint)

            key = spec_hash(spec)

            def save(data: bytes, t: int) -> None:  # fire and forget: a task must not block on Ray
                with contextlib.suppress(Exception):  # a lost keeper costs checkpoints, not the cell
                    keeper.save.remote(key, data, t)

            result = cell_fn(spec, checkpoint=checkpoint,
                             on_checkpoint=save if keeper is not None else None)
    except Exception as error:  # recorded, the grid goes on
        message = f"{type(error).__name__}: {error}".splitlines()[0] if str(error) else type(error).__name__
        return {"ok": False, "message": message, "traceback": traceback.format_exc(),
                "host": socket.gethostname(), "pid": os.getpid(),
                "seconds": time.perf_counter() - start}
    return {"ok": True, "result": result, "seconds": time.perf_counter() - start,
            "resumed_at": resumed_at, "host": socket.gethostname(), "pid": os.getpid(),
            "host_record": kernels.host_record()}


#: Times the driver resubmits a cell whose worker process or node died (a spot node reclaimed, the
#: OOM killer), from its latest checkpoint. An exception inside a cell is not retried: the task
#: catches it and returns it as a failure.
SYSTEM_RETRIES = 2

# Ray's own retries would rerun the task with its original arguments, so from its first checkpoint:
# the driver resubmits instead, with the latest
_remote_cell = ray.remote(num_cpus=1, max_retries=0)(_execute_cell)
_remote_keeper = ray.remote(num_cpus=0)(CheckpointKeeper)


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast when ``host:port`` does not answer (``ray.init`` would retry for many minutes)."""
    if address == "auto" or "://" in address or ":" not in address:
        return
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            pass
    except (OSError, ValueError) as error:
        raise ConnectionError(f"nothing answers at {address} ({error})") from None


#: Seconds within which a repeat of one condensed Ray message is not printed again.
RAY_MESSAGE_REPEAT_S = 10.0
#: The longest Ray message line printed (its first sentence, cut here).
RAY_MESSAGE_CHARS = 200


def condense_ray_message(text: str) -> str:
    """The first sentence of a message Ray's raylet pushed to the driver, on one line.

    After a worker or node death the raylet sends the driver messages of up to 50 lines (the last
    lines of its log, its ``[state-dump]``); the grid already names the cell it retries and why, so
    one sentence is kept. ``text`` without a sentence end is cut at :data:`RAY_MESSAGE_CHARS`.
    """
    text = re.sub(r"\x1b\[[0-9;]*m", "", text).strip()  # colour codes, if Ray added any
    first = text.splitlines()[0].strip() if text else ""
    # whole sentences, until there are at least 40 characters ("Raylet is terminated." alone says
    # less than "Raylet is terminated. Termination is unexpected.")
    ends = [m.start() + 1 for m in re.finditer(r"[.!?](?=\s|$)", first)]
    sentence = next((first[:e] for e in ends if e >= 40), first)
    if len(sentence) > RAY_MESSAGE_CHARS:
        sentence = sentence[: RAY_MESSAGE_CHARS - 3].rstrip() + "..."
    return sentence


class _RayMessages:
    """Replaces the function through which Ray's driver prints what the raylet pushes to it
    (``ray._private.worker.print_to_stdstream``, looked up by Ray's listener thread at each call):
    a raylet message becomes one line on stderr, ``ray: <first sentence> (Ray's logs have the
    rest)``, and a repeat within :data:`RAY_MESSAGE_REPEAT_S` is dropped; anything else is passed on
    unchanged. Ray's logs keep the full text (its session folder, ``/tmp/ray/session_latest/logs``
    on the head by default). A private hook: if a Ray release renames it, Ray prints as before.
    Once the driver's own local Ray is gone (:class:`RayLostError`) nothing more is printed: the
    driver's own line says it."""

    #: Set when the local Ray is gone: Ray's own messages about it would repeat the driver's line.
    silent = False

    def __init__(self, original: Callable, stream: Callable[[], io.TextIOBase] | None = None) -> None:
        self.original = original
        self.stream = stream or (lambda: sys.stderr)
        self.seen: dict[str, float] = {}

    @staticmethod
    def _own_ray_gone(wait_s: float = 1.0) -> bool:
        """Whether the local Ray of this driver is gone. The raylet's death can be announced before
        its process is seen ended (the kernel takes a moment to free its memory): for a while."""
        deadline = time.monotonic() + wait_s
        while local_ray.has_local_ray():
            if local_ray.lost() is not None:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return False

    def __call__(self, data: dict, *args: object, **kwargs: object) -> None:
        if _RayMessages.silent:
            return None
        if not isinstance(data, dict) or data.get("pid") != "raylet":
            return self.original(data, *args, **kwargs)
        if self._own_ray_gone():  # this driver's own Ray: its loop says so in its own line
            return None
        now = time.monotonic()
        for line in dict.fromkeys(condense_ray_message(str(m)) for m in data.get("lines", [])):
            if not line or now - self.seen.get(line, -float("inf")) < RAY_MESSAGE_REPEAT_S:
                continue
            self.seen[line] = now
            tqdm.write(f"ray: {line} (Ray's logs have the rest)", file=self.stream())


def condense_ray_messages() -> None:
    """Install :class:`_RayMessages` in this driver (once; harmless if Ray lacks the hook)."""
    import ray._private.worker as ray_worker

    current = getattr(ray_worker, "print_to_stdstream", None)
    if current is not None and not isinstance(current, _RayMessages):
        ray_worker.print_to_stdstream = _RayMessages(current)


@contextlib.contextmanager
def _ray_keeps_out_of_sigterm():
    """``ray.init`` puts two SIGTERM handlers of its own in place of the harness's: a Python one
    (``sys.exit(15)``, raised wherever the driver is, ``ray.init`` itself included), and, in the core
    worker it creates (``connect``), a C++ one that prints a stack dump before it passes the signal
    on. The first is not installed (``set_sigterm_handler`` does nothing meanwhile); SIGTERM is
    blocked while the core worker is created, and the handler before is put back over the C++ one
    before it is unblocked, so that a SIGTERM meanwhile waits, then is handled as any other. Private
    Ray functions: should a release rename them, Ray's handlers are in place until the harness's
    own are installed again after ``ray.init``."""
    import ray._private.utils as ray_utils
    import ray._private.worker as ray_worker

    set_handler = getattr(ray_utils, "set_sigterm_handler", None)
    connect = getattr(ray_worker, "connect", None)

    def quiet_connect(*args: object, **kwargs: object) -> object:
        handler = signal.getsignal(signal.SIGTERM)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        try:
            return connect(*args, **kwargs)
        finally:
            if handler is not None:  # None: not installed from Python, cannot be put back
                signal.signal(signal.SIGTERM, handler)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})

    if set_handler is not None:
        ray_utils.set_sigterm_handler = lambda handler: None
    if connect is not None and threading.current_thread() is threading.main_thread():
        ray_worker.connect = quiet_connect
    try:
        yield
    finally:
        if set_handler is not None:
            ray_utils.set_sigterm_handler = set_handler
        if connect is not None:
            ray_worker.connect = connect


def _node() -> object:
    """The Ray node object of this process (Ray's private ``_global_node``; None when Ray is down)."""
    import ray._private.worker as ray_worker

    return getattr(ray_worker, "_global_node", None)


#: What :func:`start_ray` started or joined, as ``(node,)``; :func:`stop_ray` ends that and nothing else.
_started: list = [None]


def start_ray(address: str | None, num_cpus: int | None) -> float:
    """Join the cluster at ``address``, or start a local Ray with ``num_cpus`` CPUs (default: all);
    returns the seconds it took. Quiet: no dashboard, no worker output copied to the terminal.

    A Ctrl-C or SIGTERM meanwhile is held until Ray is up, then raised (:mod:`harness.interrupts`):
    an interrupt inside ``ray.init`` can leave the driver's half-connected core aborting with a C++
    trace. A local Ray is watched (:mod:`harness.local_ray`): the processes that earlier drivers
    killed with SIGKILL left running are ended first, and this one's go with this driver."""
    start = time.perf_counter()
    condense_ray_messages()
    _RayMessages.silent = False
    if ray.is_initialized():
        return 0.0
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    # the loop fetches every cell's result and reports its error itself; what Ray would add is the
    # errors of calls the driver did not wait for (a keeper's bookkeeping, cancelled tasks)
    os.environ.setdefault("RAY_IGNORE_UNHANDLED_ERRORS", "1")
    # the workers take the driver's kernels (harness.kernels): a local Ray's inherit its environment,
    # a cluster's get them here, set before their processes load anything
    kwargs = {"logging_level": logging.ERROR, "log_to_driver": False, "configure_logging": True,
              "runtime_env": {"env_vars": kernels.worker_variables()}}
    if address:
        _check_reachable(address)
        with interrupts.deferred(), _ray_keeps_out_of_sigterm():
            ray.init(address=address, **kwargs)
            _started[0] = (_node(),)
        return time.perf_counter() - start
    local_ray.reap_orphans()
    local_ray.start_watchdog()
    try:
        with interrupts.deferred(), _ray_keeps_out_of_sigterm():
            # Ctrl-C in a terminal signals the whole foreground process group, which holds the local
            # Ray's GCS, raylet and agents; SIGINT is blocked while they start (the mask is inherited
            # across fork and exec), as Ray's own processes block it
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            try:
                ray.init(address="local", num_cpus=num_cpus or os.cpu_count(), include_dashboard=False,
                         **kwargs)
                _started[0] = (_node(),)
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    except Exception:
        if _started[0] is None:  # not up: whatever of it started goes
            local_ray.stop_watchdog()
        raise
    return time.perf_counter() - start


class RayLostError(Exception):
    """The Ray the driver runs on is gone: the local Ray's GCS or raylet has ended, or Ray gave no
    answer for minutes."""


#: Seconds of one slice of a wait on Ray, after which the driver checks that its local Ray runs.
WAIT_SLICE_S = 1.0
#: Seconds without an answer from Ray after which the driver gives up on it (a cluster's failure
#: that no local process shows).
ANSWER_S = 120.0
#: ... after Ctrl-C or SIGTERM, when the running cells' last checkpoints are fetched.
INTERRUPTED_ANSWER_S = 2.0
#: Seconds between two questions to Ray about the cluster's CPUs.
CPU_REFRESH_S = 30.0
#: Seconds :func:`stop_ray` gives Ray's own shutdown before it ends the local Ray's processes itself.
STOP_S = 5.0


def check_alive() -> None:
    """Raise :class:`RayLostError` when the local Ray of this driver has lost its GCS or raylet."""
    reason = local_ray.lost()
    if reason is not None:
        raise RayLostError(f"the local Ray stopped: {reason}")


def get(ref: ray.ObjectRef, what: str, patience_s: float = ANSWER_S) -> object:
    """``ray.get(ref)`` in slices of :data:`WAIT_SLICE_S`, checking between them that the local Ray
    runs; :class:`RayLostError` after ``patience_s`` without an answer."""
    deadline = time.monotonic() + patience_s
    while True:
        check_alive()
        try:
            return ray.get(ref, timeout=min(WAIT_SLICE_S, max(0.01, deadline - time.monotonic())))
        except ray.exceptions.GetTimeoutError:
            if time.monotonic() >= deadline:
                raise RayLostError(f"Ray gave no answer to {what} in {patience_s:.0f} s") from None


class CpuCount:
    """The cluster's CPUs, which the driver's loop reads at every turn. Ray answers from its GCS,
    and when the GCS is gone ``ray.cluster_resources()`` blocks for a minute, deaf to signals: so Ray
    is asked in a thread, at most every :data:`CPU_REFRESH_S`, and the last answer serves meanwhile
    (a local Ray's count never changes; a cluster's follows its autoscaler). 1 until Ray answers."""

    def __init__(self) -> None:
        self.node: object = None
        self.value: int | None = None
        self.asked = -float("inf")
        self.thread: threading.Thread | None = None

    def _ask(self) -> None:
        with contextlib.suppress(Exception):
            self.value = max(1, int(ray.cluster_resources().get("CPU", 0)))

    def __call__(self, wait_s: float = 10.0) -> int:
        node = _node()
        if node is not self.node:  # another Ray than the one counted
            self.node, self.value, self.asked = node, None, -float("inf")
        now = time.monotonic()
        if now - self.asked >= CPU_REFRESH_S and not (self.thread and self.thread.is_alive()):
            self.asked = now
            self.thread = threading.Thread(target=self._ask, name="cpu-count", daemon=True)
            self.thread.start()
        if self.value is None and self.thread is not None:
            self.thread.join(wait_s)
        return self.value or 1


cluster_cpus = CpuCount()


def _stop_at_once(code: int, held: interrupts.deferred) -> None:
    """:func:`stop_ray`'s backstop, in a thread: Ray's shutdown took more than :data:`STOP_S`."""
    print(f"harness.run: Ray did not shut down within {STOP_S:.0f} s; its processes are ended",
          file=sys.stderr, flush=True)
    local_ray.stop_watchdog()
    if held.received:
        interrupts.report()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    os._exit(interrupts.exit_code(held.received[0]) if held.received else code)


def stop_ray(code: int = 0, lost: bool = False) -> int:
    """Shut down the Ray that :func:`start_ray` started or joined (a Ray started otherwise is its
    starter's), within :data:`STOP_S` (then its processes are ended, and this process exits with
    ``code``); a local Ray's processes are all gone when it returns. Ctrl-C and SIGTERM are held
    meanwhile: returns ``code``, or, when one came and the run was not interrupted already, its exit
    code (after the "interrupted" line). With ``lost``, the Ray is gone: nothing is asked of it, and
    this process then exits at once (``os._exit``: Ray's exit handlers would wait on the dead Ray)."""
    started, _started[0] = _started[0], None
    if started is None:
        return code
    with interrupts.deferred(raise_after=False) as held:
        backstop = threading.Timer(STOP_S, _stop_at_once, args=(code, held))
        backstop.daemon = True
        backstop.start()
        if not lost and ray.is_initialized() and _node() is started[0]:
            with contextlib.suppress(Exception):
                ray.shutdown()
        local_ray.stop_watchdog()
        backstop.cancel()
    if held.received and code not in (interrupts.EXIT_SIGINT, interrupts.EXIT_SIGTERM):
        interrupts.report()
        code = interrupts.exit_code(held.received[0])
    if lost:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)
    return code


#: Seconds between progress lines when stderr is not a terminal.
LOG_EVERY_S = 15.0


def _format_eta(seconds: float) -> str:
    """A remaining time with its units (``2 h 05 min``, ``7 min 30 s``, ``45 s``): a bare ``7:30``
    could be read as hours or minutes."""
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
    finishes. Iterations are taken as equal work (a rho-KG^apx iteration grows with the data, so its
    first ones cost less than the last: the estimate leans optimistic early in such cells).
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
        """Estimated wall seconds until every cell has finished, on ``cpus`` CPUs."""
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


#: Seconds between rewrites of ``_progress.json`` (``harness.status`` reads it).
PROGRESS_EVERY_S = 5.0
#: The progress file is rewritten at least this often while the grid runs (a heartbeat).
HEARTBEAT_S = 30.0
#: Running cells named on the progress line (all of them are in ``harness.status``).
PROGRESS_CELLS = 2


def progress_text(spec: CellSpec, iteration: int | None, iterations: int) -> str:
    """``robot-push-3-2/rhokg-apx/seed0 it 10/100`` (``it ?/100`` before its first report): short,
    for the progress line (``harness.status`` gives each cell's full label, options included)."""
    done = "?" if iteration is None else iteration
    return f"{spec.problem}/{spec.algorithm}/seed{spec.seed} it {done}/{iterations}"


def run_cells(cells: list[CellSpec], out: Path, costs: list[float] | None = None,
              max_in_flight: int | None = None, cell_fn: Callable[..., CellResult] = run_cell,
              progress: bool = True, checkpoints: bool = True) -> Outcome:
    """Run ``cells`` on the Ray that is initialised, writing each one under ``out`` as it finishes.

    Args:
        cells: the cells to run (already filtered: none is finished or unavailable).
        out: results folder.
        costs: estimated seconds per cell (same order); the most expensive are submitted first and
            the ETA uses them. Default: all equal.
        max_in_flight: tasks submitted at once (default: twice the cluster's CPUs, counted anew at
            every turn of the loop).
        cell_fn: the cell function (tests substitute one; it must be importable by the workers and
            take run_cell's ``checkpoint`` and ``on_checkpoint`` arguments).
        progress: show a tqdm bar on stderr.
        checkpoints: keep checkpoints of running cells in ``out/_checkpoints`` (an actor on this
            node writes them), so that a cell whose worker or node dies, or a cell of a killed
            driver's grid, resumes from its last checkpoint instead of from the start.
    """
    return _GridRun(cells, out, costs, max_in_flight, cell_fn, progress, checkpoints).run()


class _Keeper:
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
        """The latest checkpoint of ``spec`` the keeper holds (None: start afresh)."""
        return self.call("load", spec_hash(spec))

    def drop(self, spec: CellSpec) -> None:
        """Forget a written cell (not awaited: a lost keeper has forgotten it anyway)."""
        self.actor.drop.remote(spec_hash(spec))

    def call(self, method: str, *args: object, patience_s: float = ANSWER_S) -> object:
        """:func:`get` of a keeper call; a dead keeper is replaced by a new one (from the stored
        checkpoints: the running cells' newer ones that were not flushed yet are lost) and the call
        is made again on it, unless the local Ray itself is gone (:class:`RayLostError`)."""
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
        """Write the checkpoints the running cells made since the last call (one that cannot be
        written costs that cell its resume point, said once, never the grid); returns the running
        cells' last finished iterations."""
        taken, progress = self.call("take", patience_s=patience_s)
        for key, data in taken.items():
            spec = self.by_key[key]
            try:
                write_checkpoint(self.out, spec, data)
            except Exception as error:
                if spec not in self.unsaved:
                    self.unsaved.add(spec)
                    print(f"cannot write the checkpoint of {cell_label(spec)} ({type(error).__name__}: "
                          f"{error}); it runs on without one", file=sys.stderr)
        return {self.by_key[key]: iteration for key, iteration in progress.items()}


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
        self.keeper = _Keeper(cells, out, self.finished) if checkpoints else None
        self.total_iterations = {spec: cell_iterations(spec) for spec in cells if spec.kind == "bo"}
        self.iteration_of: dict[CellSpec, int] = {}  # running cells' last finished iteration
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
        """Turns of the loop until every cell is written or failed; Ctrl-C or SIGTERM stops it
        (what the running cells reached is kept), a lost local Ray raises :class:`RayLostError`."""
        try:
            while self.queue or self.in_flight:
                self.turn()
            self.refresh()
        except KeyboardInterrupt as error:
            self.interrupted(error)
        except RayLostError:
            _RayMessages.silent = True
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
        if checkpoint is not None and spec in self.total_iterations:
            with contextlib.suppress(Exception):  # a checkpoint the cell cannot use it reports itself
                self.iteration_of[spec] = checkpoint_iteration(checkpoint)
                self.eta.resumes(spec, self.iteration_of[spec] / max(1, self.total_iterations[spec]))
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
        """Write a successful task's cell; a store that refuses the file (permissions, a full disk)
        turns the reply into this cell's failure."""
        try:  # per cell: where it ran, and after which iteration it resumed (None: whole)
            write_cell(self.out, spec, reply["result"],
                       self.info | {"host": reply.get("host"), "resumed_at": reply.get("resumed_at")}
                       | reply.get("host_record", {}))
        except Exception as error:
            reason = str(error).strip().splitlines()[0] if str(error).strip() else ""
            return {**reply, "ok": False, "traceback": traceback.format_exc(),
                    "message": f"cannot write its result: {type(error).__name__}: {reason}"}
        return reply

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

    def failed(self, spec: CellSpec, reply: dict) -> None:
        """A failed cell: its failure record (or, failing that, the message) and a line."""
        try:
            write_failure(self.out, spec, reply["message"], reply["traceback"],
                          {k: reply.get(k) for k in ("host", "pid", "seconds")}
                          | {"time": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
        except Exception as error:  # not even the record: the message is all there is
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
                                 f"ETA {_format_eta(self.eta.seconds(now, self.cpus))}",
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
        with contextlib.suppress(Exception):
            write_progress(self.out, running)
            self.progress_written = (now, state)
