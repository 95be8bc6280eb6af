"""One run of one case in one arm: the workspace, the prompts, the agent (the loop, an external program, a simulated
user), the checks, the score and the record; and the data types a run is told and makes."""
