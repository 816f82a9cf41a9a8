"""Developer scripts (run from the repository root)."""
