"""report.json's ``runs`` come from the items made as each run was saved (runner.output.spool), with the
same bytes as items made from the run files read back; a spool that cannot write falls back to them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import runner.output.spool
from runner.output.load import record_from_dict
from runner.output.report import run_item
from runner.output.spool import ItemSpool
from runner.output.store import to_json
from tests.helpers import cli_output

# A script whose reply holds a surrogate pair as two YAML escapes, a lone surrogate and a C1 control:
# the record held in memory and the one read back from its file differ in how they hold the pair.
CASES = """\
- id: pair
  turns: [Hi.]
  script: [{content: "smile \\ud83d\\ude00 lone \\udcff c1 \\x85 end"}]
- id: plain
  turns: [Hi.]
  script: [{tool_calls: [{name: write_file, arguments: {path: a.txt, content: "é\\n"}}]}, {content: done}]
"""


def _runs_text(folder: Path) -> str:
    """report.json's ``runs`` as ``report_text`` writes them, made from the run files read back."""
    items = [run_item(record_from_dict(json.loads(p.read_text(encoding="utf-8"))))
             for p in sorted((folder / "runs").glob("*.json"))]
    return '"runs": [\n    ' + ",\n    ".join(items) + "\n  ]\n}\n"


def _run(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "cases.yml").write_text(CASES, encoding="utf-8")
    code, _, err = cli_output(["run", str(tmp_path / "cases.yml"), "--results", str(tmp_path / "results"), "-q",
                               "--runs", "2", "-j", "3"])
    assert code == 0, err
    (folder,) = (tmp_path / "results").iterdir()
    return folder, (folder / "report.json").read_text(encoding="utf-8")


def test_the_spooled_runs_are_the_bytes_the_run_files_give(tmp_path: Path) -> None:
    folder, report = _run(tmp_path)
    assert report.endswith(_runs_text(folder))
    assert "smile 😀 lone \\udcff" in report  # the pair as its character, the lone one as its escape
    assert [r["case"] for r in json.loads(report)["runs"]] == ["cases/pair", "cases/pair", "cases/plain", "cases/plain"]


def test_a_spool_that_cannot_write_leaves_the_report_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = []

    def full(*args: object, **kwargs: object) -> object:
        made.append(1)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(runner.output.spool.tempfile, "TemporaryFile", full)
    folder, report = _run(tmp_path)
    assert made and report.endswith(_runs_text(folder))


def test_a_spool_gives_its_items_back_by_key_in_the_order_asked() -> None:
    spool = ItemSpool()
    spool.add(("b", 1), "{\n      \"x\": \"\\udcff é\"\n    }")
    spool.add(("a", 1), "[]")
    assert spool.holds([("a", 1), ("b", 1)]) and not spool.holds([("c", 1)])
    assert list(spool.items([("a", 1), ("b", 1)])) == ["[]", "{\n      \"x\": \"\\udcff é\"\n    }"]
    spool.close()


@given(st.text(st.characters(exclude_categories=())))
@example("\ud83d\ude00\ud83d")
@example("\udcff\ud800\udc00")
def test_a_document_encodes_the_same_after_a_round_trip_through_its_text(text: str) -> None:
    encoded = to_json({"reply": text, "list": [text]})
    assert to_json(json.loads(encoded)) == encoded
