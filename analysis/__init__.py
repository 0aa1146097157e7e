"""Analysis of stored results: figures, timing comparisons and the claims table (later issues)."""
