"""Executing the run matrix: the plan, one run, the workspace, prompts, the agent loop, Ctrl-C."""
