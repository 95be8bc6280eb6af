"""The names of the builtin tools, in the order they are offered: what the case loader and the
scorer need to know of the tools, without importing them (and the sandbox they run in).
runner.tools.toolbox.BUILTIN_TOOLS holds the tools themselves, under these names."""

BUILTIN_NAMES = ("read_file", "write_file", "edit_file", "list_dir", "glob", "grep", "bash")
