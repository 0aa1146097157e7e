"""A cell function that fails on purpose, importable by Ray workers (tests of failure handling)."""

from harness.cell import CellResult, CellSpec, run_cell

FAILING_ALGORITHM = "vucb-unif"


def fail_vucb_unif(spec: CellSpec, **checkpointing: object) -> CellResult:
    """``run_cell``, except that every vucb-unif cell raises ``RuntimeError``."""
    if spec.algorithm == FAILING_ALGORITHM:
        raise RuntimeError(f"injected failure in {spec.problem}/{spec.algorithm}/seed{spec.seed}")
    return run_cell(spec, **checkpointing)


def slow_cell(spec: CellSpec, checkpoint: bytes | None = None, on_checkpoint=None, host=None) -> CellResult:
    """``run_cell`` that takes at least 2 s, so that a node can be killed while cells run on it."""
    import time

    start = time.monotonic()
    result = run_cell(spec, checkpoint=checkpoint, on_checkpoint=on_checkpoint, host=host)
    time.sleep(max(0.0, 2.0 - (time.monotonic() - start)))
    return result


def slow_iterations(spec: CellSpec, checkpoint: bytes | None = None, on_checkpoint=None,
                    host=None) -> CellResult:
    """``run_cell`` with 0.5 s per iteration and a checkpoint after each: a cell long enough to be
    killed in the middle, which then resumes from its last checkpoint."""
    import time

    def save(data: bytes, t: int) -> None:
        time.sleep(0.5)
        on_checkpoint(data, t)

    return run_cell(spec, checkpoint=checkpoint, on_checkpoint=save if on_checkpoint else None,
                    checkpoint_every_s=0.0, host=host)


def busy_checkpointing_cell(spec: CellSpec, checkpoint: bytes | None = None,
                            on_checkpoint=None, host=None) -> CellResult:
    """``run_cell`` of a short cell, then 1.5 s of work that hands out a checkpoint every 10 ms,
    recording in its metadata when it ran (``busy_from``, ``busy_to``, wall clock): for checking
    that no more cells run at once than there are CPUs."""
    import time

    result = run_cell(spec)
    start = time.time()
    while time.time() - start < 1.5:
        sum(i * i for i in range(20_000))
        if on_checkpoint is not None:
            on_checkpoint(b"x" * 1000, 1)
            time.sleep(0.01)
    result.metadata.update(busy_from=start, busy_to=time.time())
    return result


def kill_keeper_then_run(spec: CellSpec, checkpoint: bytes | None = None, on_checkpoint=None,
                         host=None) -> CellResult:
    """Seed 0 first kills the grid's checkpoint keeper actor (``kill -9`` of ``ray::CheckpointKeeper``
    would do the same), then every cell runs as :func:`slow_iterations` (a checkpoint after each
    iteration): the driver must replace the keeper and finish the grid."""
    import ray

    from harness.keeper_driver import KEEPER_NAME

    if spec.seed == 0:
        for entry in ray.util.list_named_actors(all_namespaces=True):
            name = entry["name"] if isinstance(entry, dict) else entry
            if name.startswith(KEEPER_NAME):
                namespace = entry.get("namespace") if isinstance(entry, dict) else None
                ray.kill(ray.get_actor(name, namespace=namespace), no_restart=True)
    return slow_iterations(spec, checkpoint=checkpoint, on_checkpoint=on_checkpoint, host=host)
