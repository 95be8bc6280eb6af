"""Other harnesses' case formats, read as tooltrial cases."""
