"""What users write, turned into typed values: YAML with positions, the case schema, cases, discovery, config."""
