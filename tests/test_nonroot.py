"""Workspaces a command left hard to read or remove, as a user who is not root (root may do anything).

A command that makes a folder read-only (``chmod -R a-w``, as Go's module cache is) once made the
workspace's cleanup raise PermissionError and abort the suite; a file nobody may read
(``chmod 000``) made the snapshot raise.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.helpers import NOBODY, as_nobody, cli_output, nobody_home
from tests.sandboxes import needs_open_checkout

CASES = """\
- id: read-only
  turns: [Fill a module cache.]
  expect:
    files: {cache/mod/deep/f: {contains: [x]}}
  script:
    - tool_calls:
        - name: bash
          arguments: {command: "mkdir -p cache/mod/deep && echo x > cache/mod/deep/f && chmod -R a-w cache && echo s > secret && chmod 000 secret"}
    - content: done
- id: after
  turns: [Say hi.]
  expect: {response_contains: [hi]}
  script: [{content: hi}]
"""


def _nobodys_workspaces(temp: Path) -> set[Path]:
    return {p for p in temp.glob("tooltrial-*") if p.is_dir() and p.stat().st_uid == NOBODY}


@needs_open_checkout  # nobody runs the checkout's code
def test_read_only_folders_and_unreadable_files_end_no_suite() -> None:
    with nobody_home() as home:
        before = _nobodys_workspaces(home.parent)
        (home / "cases").mkdir()
        (home / "cases" / "cases.yml").write_text(CASES)
        argv = ["run", str(home / "cases"), "--sandbox", "none", "--results", str(home / "results")]
        code, out, err = as_nobody(lambda: cli_output(argv), home)
        assert code == 0, out + err
        assert out.splitlines()[:3] == ["PASS cases/read-only", "PASS cases/after", "2/2 passed"]
        (folder,) = (home / "results").iterdir()
        first, second = (json.loads(p.read_text()) for p in sorted((folder / "runs").iterdir()))
        report = json.loads((folder / "report.json").read_text())
        left = _nobodys_workspaces(home.parent) - before - {home}
    assert left == set() or os.getuid() != 0  # the workspaces are gone (as root, the test's own are nobody's)
    assert first["changes"]["added"] == ["cache/mod/deep/f", "secret"]  # the unreadable file is seen
    assert first["warnings"] == [] and second["status"] == "pass"
    assert [report["overall"][k] for k in ("passed", "failed", "errored")] == [2, 0, 0]
