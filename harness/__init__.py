"""The engine: a cell as a pure function of its spec (:func:`harness.cell.run_cell`), grids of
cells run as Ray tasks on a laptop or a cluster with checkpoints and resumption
(:mod:`harness.run`), a Parquet store, local or on an object store, with checksums and packs
(:mod:`harness.store`, :mod:`harness.results`, :mod:`harness.pack`), pinned numerical kernels
(:mod:`harness.kernels`), and the commands that check a run (``status``, ``verify``). It names no
study: studies plug in their grids and claims (:mod:`harness.study`)."""
