"""Saved runs and what is read from them: the run list and its filter bar, compare two runs,
what-if, failure modes and the paper check."""
