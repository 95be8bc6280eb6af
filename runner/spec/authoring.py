"""``tooltrial new GROUP/ID``: a commented case skeleton that validates and passes offline as written.

The skeleton is appended to ``<cases dir>/GROUP.yml`` (a list of cases, or the
``cases:`` list of a ``{defaults, cases}`` file), or starts that file. It fits the file's
``defaults.tools``: its ``avoid`` names only tools they offer (none: the line is left commented),
and when they leave out ``read_file``, which its checks and script call, the case offers
them with ``read_file`` added.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from runner.errors import CaseFileWarning, UserError, UserErrors
from runner.names import ID_PATTERN
from runner.resources import bundled
from runner.spec.casefile import load_file, validate_file
from runner.spec.discover import PROJECT_DIR
from runner.spec.offered import offers
from runner.spec.source import parse

_AVOIDED = ("write_file", "edit_file")  # what the skeleton's task never needs


SKELETON = """\
- id: {id}
  description: What this case checks, in one line.  # shown by `tooltrial list`
  {fixture_line}{tools_line}
  files:                          # written into the workspace, after the fixture
    notes.txt: |
      The planning meeting moved to Thursday at 10:00.
  # setup: [git init -q]          # shell commands run before the agent; a failure is an ERROR
  turns:                          # prompts sent in order; the reply to the last one is checked
    - When is the planning meeting? Answer from notes.txt.
  expect:                         # every check runs; each failure is listed
    response_contains: [Thursday]
    # verify: test -f out.txt     # shell command(s) that must exit 0 in the workspace afterwards
    # files:
    #   out.txt: {{contains: [done]}}
    trace:
      must_include: [read_file]   # the answer came from the file, not a guess
      {avoid_line}
      max_calls: 3
    max_turns: 5                  # most model requests; more is an ERROR
  script:                         # the scripted provider's replies, for `-p scripted` (offline)
    - tool_calls: [{{name: read_file, arguments: {{path: notes.txt}}}}]
    - content: The planning meeting is on Thursday at 10:00.
"""


@dataclass(frozen=True)
class Written:
    """Where ``new`` put the case: its file and 1-based line; ``fixture_created`` when it made the folder."""

    path: Path
    line: int
    fixture_created: Path | None = None


def default_cases_dir() -> Path:
    """``cases`` when the current directory has that folder, else the project folder ``.tooltrial/cases``."""
    return Path("cases") if Path("cases").is_dir() else PROJECT_DIR


def new_case(full_id: str, cases_dir: Path, fixture: str | None = None) -> Written:
    """Write the skeleton of ``GROUP/ID`` into ``cases_dir/GROUP.yml``.

    Raises UserError for a bad id, an id already in the file, or a file whose
    ``cases`` list cannot take one more; UserErrors when the file has errors.
    An unknown ``fixture`` gets an empty folder in ``../fixtures`` beside ``cases_dir``.
    """
    group, _, case_id = full_id.partition("/")
    if full_id.endswith((".yml", ".yaml")):  # a file path, as `tooltrial new cases/mine.yml`: not a case's id
        stem = Path(full_id).stem
        raise UserError(f"{full_id!r} is a file name, not GROUP/ID",
                        hint=f"give the case's group and id, e.g. 'tooltrial new mine/{stem}' adds case {stem} "
                             f"to {cases_dir / 'mine.yml'}")
    if not ID_PATTERN.fullmatch(group) or not ID_PATTERN.fullmatch(case_id):
        hint = "use lowercase letters, digits, '.', '_' and '-', e.g. mine/count-todos"
        raise UserError(f"{full_id!r} is not GROUP/ID", hint=hint)
    path = cases_dir / f"{group}.yml"
    fixture_line = f"fixture: {fixture}                # copied into the workspace" if fixture else (
        "# fixture: my-project          # a folder under fixtures/, copied into the workspace"
    )
    original = path.read_text(encoding="utf-8") if path.exists() else None
    skeleton = SKELETON.format(id=case_id, fixture_line=fixture_line,
                               **_fitted(_default_tools(path) if original is not None else None))
    if original is not None:
        text, line = _appended(path, case_id, skeleton)
    else:
        text, line = f"# yaml-language-server: $schema={_schema_url(path)}\n\n{skeleton}", 3
    created = _fixture_folder(cases_dir, fixture) if fixture else None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    errors = _errors(path)
    if errors:  # never leave things worse than they were
        if original is None:
            path.unlink()
        else:
            path.write_text(original, encoding="utf-8")
        if created is not None:
            created.rmdir()
        raise UserErrors(errors)
    return Written(path, line, created)


def _default_tools(path: Path) -> list[str] | None:
    """The tool names the file's ``defaults.tools`` lists, or None when it lists none (every tool is offered).
    A broken file is left for ``_appended`` to report."""
    try:
        root = parse(path.read_text(encoding="utf-8-sig"), str(path))
    except UserError:
        return None
    defaults = root.get("defaults") if isinstance(root, dict) else None
    tools = defaults.get("tools") if isinstance(defaults, dict) else None
    return [t for t in tools if isinstance(t, str)] if isinstance(tools, list) else None


def _fitted(tools: list[str] | None) -> dict[str, str]:
    """The skeleton's ``tools_line`` and ``avoid_line`` for a file whose defaults offer ``tools`` (None: all)."""
    avoided = [name for name in _AVOIDED if tools is None or offers(tools, name)]
    avoid_line = (f"avoid: [{', '.join(avoided)}]" if avoided else
                  "# avoid: [TOOL]             # offered tools that must not be called")
    tools_line = ""
    if tools is not None and not offers(tools, "read_file"):
        tools_line = f"\n  tools: [{', '.join([*tools, 'read_file'])}]  # the defaults' tools and read_file, which the checks expect"
    return {"tools_line": tools_line, "avoid_line": avoid_line}


def _errors(path: Path) -> list[UserError]:
    """The file's errors; its warnings (a check that checks nothing) stop nothing here either."""
    return [e for e in validate_file(path) if not isinstance(e, CaseFileWarning)]


def _appended(path: Path, case_id: str, skeleton: str) -> tuple[str, int]:
    """The file's text with the skeleton added to its case list, and the skeleton's first line."""
    errors = _errors(path)
    if errors:
        raise UserErrors(errors)
    existing = {case.id: case.line for case in load_file(path)}
    if case_id in existing:
        where = f"{path}:{existing[case_id]}"
        raise UserError(f"case {path.stem}/{case_id} already exists at {where}", hint="pick another id")
    text = path.read_text(encoding="utf-8-sig")
    lines = text.splitlines(keepends=True)
    root = parse(text, str(path))
    if isinstance(root, list):
        indent, end = 0, len(lines)
    else:
        cases = root["cases"]
        if cases.fa.flow_style():
            hint = "write it as a block list to add cases"
            raise UserError(f"{path}: the 'cases' list is written in flow style ([...])", hint=hint)
        item_line = lines[cases.lc.data[0][0]]
        indent = len(item_line) - len(item_line.lstrip(" "))
        later = [root.lc.data[key][0] for key in root if root.lc.data[key][0] > root.lc.data["cases"][0]]
        end = min(later, default=len(lines))
    head = "".join(lines[:end]).rstrip("\n") + "\n\n"
    block = "".join(" " * indent + row if row.strip() else row for row in skeleton.splitlines(keepends=True))
    tail = "".join(lines[end:])
    return head + block + ("\n" + tail if tail else ""), head.count("\n") + 1


def _fixture_folder(cases_dir: Path, name: str) -> Path | None:
    """None when the fixtures folder the loader will use has ``name``; else the empty folder made for it."""
    beside = cases_dir.resolve().parent / "fixtures"
    home = beside if beside.is_dir() else bundled("fixtures")
    if (home / name).is_dir():
        return None
    if not ID_PATTERN.fullmatch(name):
        raise UserError(f"fixture name {name!r} is not valid", hint="use lowercase letters, digits, '.', '_' and '-'")
    (beside / name).mkdir(parents=True)
    return beside / name


def _schema_url(path: Path) -> str:
    """The case-file schema as the YAML language server should find it from ``path``: relative when it can be."""
    schema = (bundled("schemas") / "case-file.schema.json").resolve()
    try:
        up = path.parent.resolve().relative_to(schema.parent.parent)
    except ValueError:
        return schema.as_uri()
    return "/".join([".."] * len(up.parts) + [schema.parent.name, schema.name])
