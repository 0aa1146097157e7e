"""The harness: cells as pure functions of their specs, grids of them on Ray, a Parquet store, the CLI."""
