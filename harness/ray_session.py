"""The driver's Ray: :func:`start_ray` joins a cluster or starts a local Ray, :func:`stop_ray` shuts
down the Ray it started, and the driver never blocks on Ray without a time limit.

* Every ``ray.get`` (:func:`get`) and ``ray.wait`` has a timeout, between whose slices the local
  Ray's GCS and raylet must still run (:func:`check_alive`, :func:`harness.local_ray.lost`), so that
  a dead local Ray is noticed within seconds (:class:`RayLostError`) rather than waited on forever.
* The cluster's CPU count, which Ray answers from its GCS, is asked in a thread and cached
  (:class:`CpuCount`, :data:`cluster_cpus`).
* :func:`stop_ray` shuts down the Ray that :func:`start_ray` started within :data:`STOP_S`, holding
  Ctrl-C and SIGTERM meanwhile, and a local Ray's processes all go with it (:mod:`harness.local_ray`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import threading
import time

import ray

import harness.interrupts as interrupts
import harness.kernels as kernels
import harness.local_ray as local_ray
from harness.ray_messages import RayMessages, condense_ray_messages


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
    """Join the cluster at ``address``, or start a local Ray with ``num_cpus`` CPUs.

    It is quiet: no dashboard, no worker output copied to the terminal. A Ctrl-C or SIGTERM meanwhile is held
    until Ray is up, then raised (:mod:`harness.interrupts`): an interrupt inside ``ray.init`` can leave the
    driver's half-connected core aborting with a C++ trace. A local Ray is watched (:mod:`harness.local_ray`):
    the processes that earlier drivers killed with SIGKILL left running are ended first, and this one's go
    with this driver.

    Args:
        address: the cluster's address, or None for a local Ray.
        num_cpus: the local Ray's CPUs (default: all).

    Returns:
        The seconds it took; 0 where Ray was initialised already.
    """
    start = time.perf_counter()
    condense_ray_messages()
    RayMessages.silent = False
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
    """``ray.get(ref)`` in slices of :data:`WAIT_SLICE_S`, checking between them that the local Ray runs.

    Args:
        ref: the object to wait for.
        what: what it is the answer to, named in the error.
        patience_s: how long to wait.

    Returns:
        The object's value.

    Raises:
        RayLostError: the local Ray is gone, or no answer came in ``patience_s``.
    """
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
    """Shut down the Ray that :func:`start_ray` started or joined (a Ray started otherwise is its starter's).

    It is shut down within :data:`STOP_S` (then its processes are ended, and this process exits with
    ``code``); a local Ray's processes are all gone when it returns. Ctrl-C and SIGTERM are held meanwhile.
    With ``lost``, the Ray is gone: nothing is asked of it, and this process then exits at once (``os._exit``:
    Ray's exit handlers would wait on the dead Ray).

    Args:
        code: the command's exit code so far.
        lost: whether the Ray is gone already.

    Returns:
        ``code``, or, when a signal came meanwhile and the run was not interrupted already, its exit code
        (after the "interrupted" line). With ``lost`` (and a Ray to stop) it does not return.
    """
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
        interrupts.exit_now(code)
    return code
