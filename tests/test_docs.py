"""The docs are held to the code: every YAML example validates, and runs where it has a script; the console
examples of offline commands print what the pages show; the CLI reference is the parser's; every page is in the
site's navigation; the README stays short.

Pages mark their examples for these tests (docs/development.md, "These docs"): ``<!-- file: PATH -->`` before a
YAML block writes it to PATH in the folder the page's commands run in, ``<!-- patch: PATH -->`` before a ``diff``
block applies it there, ``<!-- not checked: why -->`` before a block leaves it out; a YAML block whose first line
is ``# partial: ...`` (a fragment) or ``# other format: ...`` (a file for another program) is only parsed, and
one whose first line is ``# fails on purpose: ...`` is validated but its script is not expected to pass.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import itertools
import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from runner.cli import main
from runner.spec.config import read_config
from tests.helpers import BUNDLED_FILES, ROOT

DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
README = ROOT / "README.md"
REGENERATE = ".venv/bin/python docs/gen_cli.py"
FRAGMENT = ("# partial:", "# other format:")
FAILS = "# fails on purpose:"
CONFIG_KEYS = {"providers", "default_provider", "jobs", "results_dir", "judge", "agents"}
BLOCK = re.compile(r"(?:^<!-- (?P<mark>[a-z ]+):\s*(?P<arg>.*?) -->\n)?^```(?P<lang>\w*)\n(?P<body>.*?)^```$",
                   re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: its language, text, the mark before it (``file``, ``patch``, ``not checked``
    or empty) with its argument, and the line it starts on (1-based)."""

    page: Path
    line: int
    lang: str
    body: str
    mark: str
    arg: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, in order, with the mark on the line before it."""
    text = page.read_text(encoding="utf-8")
    return [Block(page, text.count("\n", 0, m.start("lang")) + 1, m["lang"], m["body"], m["mark"] or "", m["arg"] or "")
            for m in BLOCK.finditer(text)]


ALL = [block for page in [README, *PAGES] for block in blocks(page)]
YAML_BLOCKS = [b for b in ALL if b.lang == "yaml"]
EXAMPLES = [b for b in YAML_BLOCKS if not b.body.startswith(FRAGMENT)]


def test_the_marks_are_known_and_every_yaml_example_is_found() -> None:
    assert {b.mark for b in ALL} <= {"", "file", "patch", "not checked"}
    assert len(EXAMPLES) >= 9 and any(b.page.name == "tooltrial.yml" or "providers:" in b.body for b in EXAMPLES)


@pytest.mark.parametrize("block", YAML_BLOCKS, ids=lambda b: b.where)
def test_each_yaml_block_is_yaml(block: Block) -> None:
    YAML(typ="safe", pure=True).load(block.body)


def _cli(argv: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    """``tooltrial ARGV`` in-process in ``cwd``: the exit code and stdout and stderr as one text, in the order
    printed, less the warning a machine without a working bubblewrap adds."""
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("COLUMNS", raising=False)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(argv)
    text = "".join(line for line in out.getvalue().splitlines(keepends=True)
                   if not line.startswith("warning: bubblewrap unavailable"))
    return code, text


@pytest.mark.parametrize("block", EXAMPLES, ids=lambda b: b.where)
def test_each_example_validates_and_passes_with_its_script(
        block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = YAML(typ="safe", pure=True).load(block.body)
    if isinstance(data, dict) and set(data) <= CONFIG_KEYS:
        path = tmp_path / "tooltrial.yml"
        path.write_text(block.body, encoding="utf-8")
        assert read_config(path).providers
        return
    path = tmp_path / "cases" / (Path(block.arg).name if block.mark == "file" else "example.yml")
    path.parent.mkdir()
    path.write_text(block.body, encoding="utf-8")
    code, text = _cli(["validate", str(path)], tmp_path, monkeypatch)
    cases = data["cases"] if isinstance(data, dict) else data
    counted = "1 case in 1 file is" if len(cases) == 1 else f"{len(cases)} cases in 1 file are"
    assert (code, text) == (0, f"{counted} valid\n"), block.where
    runnable = [c["id"] for c in cases if "script" in c and "judge" not in c.get("expect", {})]
    if not runnable or block.body.startswith(FAILS):
        return
    selection = [arg for case_id in runnable for arg in ("-c", f"{path.stem}/{case_id}")]
    report = tmp_path / "report.json"
    code, text = _cli(["run", str(path), *selection, "--results", str(tmp_path / "results"),
                       "--report", str(report)], tmp_path, monkeypatch)
    runs = json.loads(report.read_text(encoding="utf-8"))["runs"]
    assert [(r["case"], r["status"]) for r in runs] == [(f"{path.stem}/{i}", "pass") for i in runnable], text
    assert code == 0


def _normal(line: str) -> str:
    """A line with what differs between two runs made alike: times, results folder ids, table widths."""
    line = re.sub(r"results/\d{8}T\d{6}Z-[0-9a-f]{6}", "results/ID", line)
    line = re.sub(r"\b\d+\.\d+s\b", "Ts", line)
    line = re.sub(r"^─+$", "─", line)
    return " ".join(line.split())


def _matches(expected: list[str], got: list[str]) -> bool:
    """Whether ``got`` is ``expected``, where a line ``...`` in ``expected`` stands for any lines."""
    pattern = "".join(r"(?:[^\n]*\n)*?" if line == "..." else re.escape(line) + r"\n" for line in expected)
    return re.fullmatch(pattern, "".join(line + "\n" for line in got)) is not None


def _patch(path: Path, diff: str) -> None:
    lines = diff.splitlines()
    old = "".join(line[1:] + "\n" for line in lines if line[:1] in "- ")
    new = "".join(line[1:] + "\n" for line in lines if line[:1] in "+ ")
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"the patch does not apply to {path.name}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def _workdir(tmp_path: Path) -> Path:
    """A folder like the checkout's top, where a page's commands run: the bundled cases and fixtures copied
    (pages add their own; a fixtures folder beside the cases may not link out of its project), the prompts
    and schemas linked."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "cases").mkdir()
    for case_file in BUNDLED_FILES:
        (work / "cases" / case_file.name).write_bytes(case_file.read_bytes())
    shutil.copytree(ROOT / "fixtures", work / "fixtures", symlinks=True)
    for name in ("prompts", "schemas"):
        (work / name).symlink_to(ROOT / name, target_is_directory=True)
    return work


CONSOLE_PAGES = [page for page in [README, *PAGES] if any(b.lang == "console" and b.mark != "not checked"
                                                         for b in blocks(page))]


@pytest.mark.parametrize("page", CONSOLE_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_console_examples_print_what_the_page_shows(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = _workdir(tmp_path)
    for block in blocks(page):
        if block.mark == "file":
            (work / block.arg).write_text(block.body, encoding="utf-8")
        elif block.mark == "patch":
            _patch(work / block.arg, block.body)
        elif block.lang == "console" and block.mark != "not checked":
            shown = block.body.splitlines()
            starts = [i for i, line in enumerate(shown) if line.startswith("$ ")] + [len(shown)]
            for start, end in itertools.pairwise(starts):
                command = shlex.split(shown[start][2:])
                assert command[0] == "tooltrial", (
                    f"{block.where}: only tooltrial commands run here; mark the block <!-- not checked: why -->")
                _, text = _cli(command[1:], work, monkeypatch)
                got = [_normal(line) for line in text.splitlines()]
                expected = [_normal(line) for line in shown[start + 1:end]]
                assert _matches(expected, got), f"{block.where}: {shown[start]}\nprints:\n{text}"


def test_the_cli_reference_is_the_parsers() -> None:
    spec = importlib.util.spec_from_file_location("gen_cli", DOCS / "gen_cli.py")
    assert spec and spec.loader
    gen_cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_cli)
    page = DOCS / "reference" / "cli.md"
    assert page.read_text(encoding="utf-8") == gen_cli.render(), (
        f"{page.relative_to(ROOT)} is stale: regenerate it with {REGENERATE}")


def test_the_tools_reference_lists_each_builtin_tool_with_its_parameters() -> None:
    from runner.tools.registry import BUILTINS

    rows = re.findall(r"^\| `(\w+)` \| (.*?) \|", (DOCS / "reference" / "tools.md").read_text(encoding="utf-8"),
                      re.MULTILINE)
    assert [name for name, _ in rows] == list(BUILTINS)
    for name, parameters in rows:
        assert re.findall(r"(?:^|, )`(\w+)`", parameters) == list(BUILTINS[name].parameters["properties"]), name


def test_the_readme_is_short() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) < 200


def _nav(entries: list[object]) -> list[str]:
    """The page paths of an mkdocs `nav`, at every depth."""
    found = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        found += _nav(value) if isinstance(value, list) else [value]
    return found


def test_every_page_is_in_the_navigation_and_every_link_leads_to_a_file() -> None:
    config = YAML(typ="safe", pure=True).load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = _nav(config["nav"])
    assert sorted(nav) == sorted(str(page.relative_to(DOCS)) for page in PAGES)
    for page in [README, *PAGES]:
        for target in re.findall(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)} links to {target}, which is missing"


def test_the_architecture_page_names_every_module_in_its_package() -> None:
    rows, package = set(), ""
    for line in (DOCS / "architecture.md").read_text(encoding="utf-8").split("## The tree", 1)[1].splitlines():
        first = line.split("|")[1].strip() if line.startswith("|") else ""
        if first.startswith("**") and first.endswith("/**"):
            package = first.strip("*/")
        rows |= {f"{package}/{name}".lstrip("/") for name in re.findall(r"`([\w/]+\.py)`", first)}
    modules = {str(path.relative_to(ROOT / "runner")) for path in (ROOT / "runner").rglob("*.py")
               if path.name != "__init__.py" or path.parent == ROOT / "runner"}
    assert sorted(modules - rows) == [] and sorted(rows - modules) == []
