"""The names of the builtin tools, in the order they are offered: what the case loader and the
scorer need to know of the tools, without importing them (and the sandbox they run in).
runner.tools.toolbox.BUILTIN_TOOLS holds the tools themselves, under these names."""

BUILTIN_NAMES = ("read_file", "write_file", "edit_file", "list_dir", "glob", "grep", "bash")

# The parameters of each builtin tool, as its JSON Schema's ``properties`` name them (no others
# are accepted: each schema has ``additionalProperties: false``), for the case rules that check
# what ``args`` names; tests/test_validate_rules.py holds them to the tools' own schemas.
BUILTIN_PARAMETERS: dict[str, tuple[str, ...]] = {
    "read_file": ("path", "offset", "limit"),
    "write_file": ("path", "content"),
    "edit_file": ("path", "old_string", "new_string"),
    "list_dir": ("path",),
    "glob": ("pattern", "path"),
    "grep": ("pattern", "path", "glob"),
    "bash": ("command",),
}
