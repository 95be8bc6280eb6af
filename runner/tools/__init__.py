"""The builtin tools, the Toolbox that offers them in a run, and the path rule they all follow."""
