"""An external agent's own folder is brought back read-only under bubblewrap when a hidden folder (a
home, the results folder) holds it: a checkout cloned into a home folder runs its agent programs."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.sandbox.bounds import Access, Bounds
from runner.sandbox.bwrap import PRIVATE
from runner.sandbox.command import Sandbox
from tests.helpers import ROOT
from tests.sandboxes import BWRAP

AGENTS = ROOT / "examples" / "agents"
pytestmark = [pytest.mark.skipif(BWRAP is None, reason="bubblewrap does not work here"),
              pytest.mark.skipif(any(ROOT.resolve().is_relative_to(p) for p in PRIVATE),
                                 reason="the checkout lies in bubblewrap's private /tmp")]


def test_a_visible_folder_inside_a_hidden_one_is_seen_read_only_and_nothing_else_of_it(tmp_path: Path) -> None:
    sandbox = Sandbox("bwrap", BWRAP, hide=[ROOT / "examples"])
    probe = (f"head -c 12 {AGENTS / 'agent.py'}; echo; ls {ROOT / 'examples'}; "
             f"touch {AGENTS / 'x'} 2>/dev/null && echo wrote || echo read-only")
    env = {"PATH": "/usr/bin:/bin"}
    seen = sandbox.run(probe, tmp_path, env, Bounds(20), Access(visible=(str(AGENTS),)), split=True)
    assert seen.exit_code == 0, seen.stderr
    assert seen.output.splitlines() == [AGENTS.joinpath("agent.py").read_text()[:12].splitlines()[0], "agents",
                                        "read-only"]
    unseen = sandbox.run(f"cat {AGENTS / 'agent.py'}", tmp_path, env, Bounds(20), split=True)
    assert unseen.exit_code == 1 and "No such file or directory" in (unseen.stderr or "")
    assert not (AGENTS / "x").exists()
