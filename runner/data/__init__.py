"""Bundled data: schemas, cases, fixtures and prompts (mapped from the top-level folders)."""
