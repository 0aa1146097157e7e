"""Analysis of stored results: the report (:mod:`analysis.report`: regret figures with 70 % bands,
timing and complexity, cost against quality), a study's claims decided by seed-paired tests
(:mod:`analysis.claims`), their statistical recheck on any host (:mod:`analysis.recheck`), runs
compared across hosts (:mod:`analysis.across_runs`) and each study's sources table
(:mod:`analysis.sources`). It reads results; it never runs the engine's grids."""
