"""The harness: cells as pure functions of their specs, a Parquet store, and the command line."""
