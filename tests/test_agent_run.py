"""One external-agent run in-process (runner.run.execute): the suite's Ctrl-C (``cancel``) stops the agent
program's whole process group and the run is recorded as cancelled; a simulated user talks to the program,
each of its messages one invocation, each reply the last text through the endpoint."""

from __future__ import annotations

import sys
import threading
import time
import uuid
from pathlib import Path

from runner.kinds import ErrorKind, UserStop
from runner.providers.registry import resolve_provider
from runner.run.execute import execute
from runner.run.options import Arm, RunOptions
from runner.run.prompts import load_prompt
from runner.sandbox.command import Sandbox
from runner.spec.agentspec import AgentSpec
from runner.spec.case import SimulatedUser
from tests.helpers import ROOT, make_case

AGENT = f"{sys.executable} {ROOT / 'tests' / 'agents' / 'messages_agent.py'}"
ARM = Arm(resolve_provider("scripted"), load_prompt(None))


def test_cancel_stops_the_agents_process_group_and_the_run_is_cancelled() -> None:
    marker = f"agent-{uuid.uuid4().hex}"
    agent = AgentSpec("hung", f"{AGENT} {marker} & wait", "stdin", env={"AGENT_SLEEP": "60"})
    case = make_case(agent=agent, script=({"content": "ok"},))
    options = RunOptions(sandbox=Sandbox())
    threading.Timer(1.0, options.cancel.set).start()
    began = time.monotonic()
    record = execute(case, ARM, options)
    assert (record.error_kind, record.cause) == (ErrorKind.CANCELLED, "cancelled: the suite was interrupted")
    assert time.monotonic() - began < 10
    assert [(c.phase, c.timed_out) for c in record.commands] == [("agent", True)]
    assert not [p for p in Path("/proc").iterdir() if p.name.isdigit() and marker in _cmdline(p)]


def _cmdline(process: Path) -> str:
    try:
        return (process / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def test_a_simulated_user_talks_to_the_agent_program_one_invocation_a_message() -> None:
    user = SimulatedUser("scripted", "You want order 42 refunded.", first="Refund my order, please.",
                         script=({"content": "It is order 42."}, {"content": "Thanks! ###STOP###"}))
    case = make_case(turns=(), user=user, agent=AgentSpec("msg", AGENT, "stdin"),
                     script=({"content": "Which order?"}, {"content": "Order 42 is refunded."}),
                     expect={"response_contains": ["refunded"]})
    record = execute(case, ARM, RunOptions(sandbox=Sandbox()))
    assert (record.status, record.user_stop, record.final_reply) == ("pass", UserStop.MARKER, "Order 42 is refunded.")
    assert [c.stdout for c in record.commands] == ["Which order?\n", "Order 42 is refunded.\n"]
    assert [t.content for t in record.user_turns] == ["Refund my order, please.", "It is order 42.", "Thanks! ###STOP###"]
    assert [w["turn"] for w in record.agent["wire"]] == [0, 1]
