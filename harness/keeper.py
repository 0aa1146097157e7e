"""The checkpoint keeper's actor class, kept apart from the rest of the harness.

Ray starts the actor in a process of its own and imports the module that defines its class there.
This module imports nothing, and the keeper holds cells by their spec hash
(:func:`harness.results.spec_hash`), never a :class:`~harness.spec.CellSpec` (unpickling one imports
torch and the project): its process is up in about 1.4 s instead of 4 s, which every grid run
and every replacement of a lost keeper waits for. The driver's side is
:class:`harness.keeper_driver.Keeper`.
"""

from __future__ import annotations


class CheckpointKeeper:
    """A Ray actor on the driver's node that holds the running cells' latest checkpoints in
    memory. The driver preloads the checkpoints of the cells it is about to run, takes the new ones
    about once a second and writes them to ``_checkpoints/`` in the results store itself: only the
    driver ever touches the store (workers and this actor need neither its path nor credentials).
    Calls run one at a time, in the order each caller sent them. A cell's saves are not awaited, so
    one may arrive after the driver dropped the finished cell: it is ignored. ``key`` is a cell's
    spec hash."""

    def __init__(self) -> None:
        self.latest: dict[str, bytes] = {}
        self.dirty: set[str] = set()
        self.finished: set[str] = set()
        self.progress: dict[str, int] = {}  # running cell -> its last finished iteration

    def put(self, key: str, data: bytes) -> None:  # preloaded by the driver: not dirty
        self.latest[key] = data

    def load(self, key: str) -> bytes | None:
        """The latest checkpoint of a cell the keeper holds.

        Args:
            key: the cell's spec hash.

        Returns:
            The checkpoint's bytes, or None for none.
        """
        return self.latest.get(key)

    def save(self, key: str, data: bytes, iteration: int | None = None) -> None:
        if key in self.finished:  # a late save of a cell already written
            return
        self.latest[key] = data
        self.dirty.add(key)
        if iteration is not None:
            self.progress[key] = iteration

    def take(self) -> tuple[dict[str, bytes], dict[str, int]]:
        """The checkpoints saved since the last call, and the running cells' iterations.

        Returns:
            (spec hash -> the latest checkpoint saved since the last call, spec hash -> the last finished
            iteration of each running cell that said it).
        """
        taken = {key: self.latest[key] for key in self.dirty}
        self.dirty.clear()
        return taken, dict(self.progress)

    def drop(self, key: str) -> None:
        self.latest.pop(key, None)
        self.dirty.discard(key)
        self.progress.pop(key, None)
        self.finished.add(key)
