"""External agent programs: the recording model endpoint they talk to and their trajectory rebuilt from its wire."""
