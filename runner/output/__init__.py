"""What a run leaves on disk: the results folder, the report document, JUnit, recordings."""
