"""The table of output formats is the one place a format is added: a made-up format registered as one row is
offered by ``run`` and ``report``, streamed as runs are saved and written by both; an output that cannot be
written ends ``run`` and ``report`` alike (exit 2, ``error: cannot write ...``, the other outputs still written)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import runner.output.html
import runner.output.junit
from runner.errors import ExitCode
from runner.output import formats
from runner.output.finish import Ending
from runner.output.formats import Option, OutputFormat
from runner.output.store import ascii_json, to_json, write_replace
from runner.run.record import RunRecord
from tests.helpers import BAD_RUN, GOOD, run_cli

# For each piece the made-up format's item made: whether it came with the record's dict (made as the run was
# saved) or without (made from the record read back from its file).
MADE_WITH_DATA: list[bool] = []


def count_item(record: RunRecord, data: dict[str, Any] | None) -> str:
    """The made-up format's piece of one run: its status."""
    MADE_WITH_DATA.append(data is not None)
    return str(record.status)


def write_count(path: Path, ending: Ending) -> None:
    """The made-up format: ``N runs, M passed`` of the pieces, in plan order."""
    statuses = list(ending.items("count_txt"))
    write_replace(path, f"{len(statuses)} runs, {statuses.count('pass')} passed\n")


@pytest.fixture
def count_txt() -> Iterator[None]:
    """``--count-txt FILE`` on ``run`` and ``report``, registered as one row for the test."""
    formats.register(OutputFormat(
        "count_txt", (Option("--count-txt", "write how many runs passed to FILE", example="count.txt"),),
        writer=f"{__name__}:write_count", commands=frozenset({formats.RUN, formats.REPORT}),
        item=f"{__name__}:count_item"))
    MADE_WITH_DATA.clear()
    yield
    formats.unregister("count_txt")


def _suite(tmp_path: Path) -> Path:
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "good.yml").write_text(GOOD)
    (tmp_path / "cases" / "bad.yml").write_text(BAD_RUN)
    return tmp_path / "cases"


def test_a_format_registered_as_one_row_is_offered_streamed_and_written_by_run_and_report(
        count_txt: None, tmp_path: Path) -> None:
    assert "--count-txt FILE" in run_cli("run", "--help").stdout
    assert "--count-txt FILE" in run_cli("report", "--help").stdout
    assert "--count-txt" not in run_cli("merge", "--help").stdout

    cases, counted = _suite(tmp_path), tmp_path / "run.txt"
    ran = run_cli("run", str(cases), "--results", str(tmp_path / "r"), "--count-txt", str(counted))
    assert ran.returncode == ExitCode.FAILED, ran.stderr
    assert counted.read_text() == "5 runs, 2 passed\n"
    assert MADE_WITH_DATA == [True] * 5  # each made as its run was saved, none read back

    MADE_WITH_DATA.clear()
    (folder,) = (tmp_path / "r").iterdir()
    shown = run_cli("report", str(folder), "--count-txt", str(tmp_path / "report.txt"))
    assert shown.returncode == ExitCode.OK, shown.stderr
    assert (tmp_path / "report.txt").read_text() == "5 runs, 2 passed\n"
    assert MADE_WITH_DATA == [False] * 5  # made from the run files

    refused = run_cli("report", str(folder), "--count-txt", str(tmp_path))
    folder_hint = f"(give a file path, e.g. {tmp_path / 'count.txt'})"
    assert refused.returncode == ExitCode.USAGE
    assert refused.stderr == f"error: --count-txt {tmp_path} is a folder {folder_hint}\n"


def test_the_table_refuses_a_second_row_of_a_name_or_flag_it_has(count_txt: None) -> None:
    with pytest.raises(ValueError):
        formats.register(OutputFormat("other", (Option("--count-txt", "again"),), "m:f", frozenset({formats.RUN})))
    with pytest.raises(KeyError):
        formats.unregister("no-such-format")


def _disk_full(path: Path, text: object) -> None:
    raise OSError(28, "No space left on device")


def test_an_output_that_cannot_be_written_ends_run_and_report_alike(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    cases, junit, summary = _suite(tmp_path), tmp_path / "junit.xml", tmp_path / "summary.md"
    monkeypatch.setattr(runner.output.junit, "write_replace", _disk_full)
    ran = run_cli("run", str(cases), "--results", str(tmp_path / "r"), "--junit", str(junit),
                  "--summary-md", str(summary))
    assert ran.returncode == ExitCode.INTERRUPTED
    assert f"error: cannot write {junit}: No space left on device\n" in ran.stderr
    assert summary.read_text().startswith("## tooltrial: 2/5 runs passed")

    (folder,) = (tmp_path / "r").iterdir()
    summary.unlink()
    page = tmp_path / "page.html"
    monkeypatch.setattr(runner.output.html, "write_replace", _disk_full)
    shown = run_cli("report", str(folder), "--html", str(page), "--summary-md", str(summary), "--output", "json")
    assert shown.returncode == ExitCode.INTERRUPTED
    assert shown.stderr == f"error: cannot write {page}: No space left on device\n"
    assert json.loads(shown.stdout)["results"] == str(folder)  # the ending is printed whole all the same
    assert summary.read_text().startswith("## tooltrial: 2/5 runs passed")


def test_run_and_report_print_every_json_document_with_the_one_encoder(tmp_path: Path) -> None:
    ran = run_cli("run", str(_suite(tmp_path)), "--results", str(tmp_path / "r"), "--output", "json")
    (folder,) = (tmp_path / "r").iterdir()
    one = run_cli("report", str(folder), "--output", "json")
    two = run_cli("report", str(folder), str(folder), "--output", "json")
    assert json.loads(two.stdout)["kind"] == "tooltrial.regression"
    for done in (ran, one, two):  # runner.output.store.to_json's text, as ASCII
        assert done.stdout == ascii_json(to_json(json.loads(done.stdout)))
