"""What a run prints: run lines, tables, the progress bar."""
