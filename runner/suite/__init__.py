"""The run matrix: cases x arms x repeats planned, executed on threads, worker processes or Ray, each run saved as it
ends, Ctrl-C, --shard and --resume; one run itself is runner.run's."""
