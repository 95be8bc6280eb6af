"""Per-run metrics and failure cause, statistics, the aggregation, gates and the regression view."""
