"""Checks: one function per ``expect`` key, their results, and the registry that runs them."""
