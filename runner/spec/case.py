"""The Case model: one case of a group after its file's defaults are merged, and how a validated
case mapping becomes one (lists normalised, defaults filled in).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.spec.expect import Expect, TurnExpect, as_list, turn_expect_of
from runner.spec.inject import Injection, attack_expect, injections_of, task_expect

if TYPE_CHECKING:
    from runner.spec.agentspec import AgentSpec
    from runner.spec.faults import Fault

DEFAULT_MAX_TURNS = 30
DEFAULT_USER_TURNS = 10
DEFAULT_STOP = "###STOP###"  # tau-bench's user simulator's marker


@dataclass(frozen=True, slots=True)
class SimulatedUser:
    """A case's ``user:``: a model that plays the user in place of fixed turns (runner.run.simuser).

    Attributes:
        model: ``scripted``, an alias or a litellm model string; it does not follow ``-p``.
        persona: the user model's system prompt, a Jinja template.
        first: the opening message template, sent as is; None: the user model writes it.
        max_turns: most messages the user sends the agent, the first included.
        stop: the marker whose presence in a user reply ends the conversation.
        script: the scripted user's replies as ``script:`` items (``{content, usage?}``), or None.
    """

    model: str
    persona: str
    first: str | None = None
    max_turns: int = DEFAULT_USER_TURNS
    stop: str = DEFAULT_STOP
    script: tuple[Mapping[str, Any], ...] | None = None


@dataclass(frozen=True, slots=True)
class Case:
    """One case of a group (a case file), after defaults are merged.

    Attributes:
        group: the case file's stem (``replio`` for a replio fixture).
        id: unique within the group.
        source: the case file it came from.
        line: 1-based line of the case in ``source``.
        turns: prompt templates sent in order; () when a simulated ``user`` talks instead.
        turn_expect: per turn, the checks written on it (``{content, expect}`` turns), an empty
            TurnExpect for none; () when no turn has any.
        expect: the case's checks and turn limit, typed (runner.spec.expect); each check kind reads its own.
        script: the scripted provider's replies (``content`` / ``tool_calls``) or None.
        fixture / fixtures_dir: the folder (a relative path) copied into the workspace, and the fixtures
            folder it is in, resolved when the case is loaded (runner.spec.fixture copies no link below it).
        timeout: wall-clock seconds for the whole run, or None for the default.
        command_timeout: seconds allowed to each command (setup, tools, verify), or None for the default.
        network: whether agent commands may reach the network (sandboxed runs).
        runs / min_pass_rate: this case's repeat count and pass-rate gate, or None for the suite's.
        tools: names offered to the model, None meaning every builtin plus the mocks and MCP tools.
        mcp: the case's MCP servers, each ``{name, command, url, env, timeout}`` with every key present
            (``command`` a tuple of strings or None, ``url`` a string or None, ``timeout`` seconds).
        user: the simulated user that replaces ``turns``, or None.
        agent: the external agent program that replaces the built-in loop (runner.spec.agentspec): its
            spec, its name under tooltrial.yml's ``agents`` until the run resolves it, or None.
        faults: the tool failures injected in its runs (runner.spec.faults, runner.tools.faults), in order.
        inject / attack / twin_of: the texts planted (runner.spec.inject), the attacker's checks
            (``expect.attack``) or None, and for a clean twin the id of the case it is the twin of.
    """

    group: str
    id: str
    source: Path
    line: int
    turns: tuple[str, ...]
    description: str = ""
    tags: tuple[str, ...] = ()
    fixture: str | None = None
    files: Mapping[str, str] = field(default_factory=dict)
    setup: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    vars: Mapping[str, Any] = field(default_factory=dict)
    system: str | None = None
    tools: tuple[str, ...] | None = None
    deny: tuple[str, ...] = ()
    mocks: tuple[Mapping[str, Any], ...] = ()
    mcp: tuple[Mapping[str, Any], ...] = ()
    expect: Expect = field(default_factory=Expect)
    timeout: float | None = None
    script: tuple[Mapping[str, Any], ...] | None = None
    fixtures_dir: Path | None = None
    command_timeout: float | None = None
    network: bool = False
    runs: int | None = None
    min_pass_rate: float | None = None
    turn_expect: tuple[TurnExpect, ...] = ()
    user: SimulatedUser | None = None
    agent: AgentSpec | str | None = None
    faults: tuple[Fault, ...] = ()
    inject: tuple[Injection, ...] = ()
    attack: Expect | None = None
    twin_of: str | None = None

    @property
    def full_id(self) -> str:
        return f"{self.group}/{self.id}"

    @property
    def max_turns(self) -> int:
        return DEFAULT_MAX_TURNS if self.expect.max_turns is None else int(self.expect.max_turns)


def build_case(path: Path, group: str, line: int, data: dict[str, Any], fixtures: Path) -> Case:
    """A validated case mapping (merged over the defaults), starting at ``line``, as a Case of ``group``."""
    return Case(
        group=group,
        id=data["id"],
        source=path,
        line=line,
        turns=tuple(t["content"] if isinstance(t, dict) else t for t in data.get("turns", ())),
        description=data.get("description", ""),
        tags=tuple(data.get("tags", ())),
        fixture=data.get("fixture"),
        files=data.get("files", {}),
        setup=tuple(as_list(data.get("setup", []))),
        env={name: _env_text(value) for name, value in data.get("env", {}).items()},
        vars=data.get("vars", {}),
        system=data.get("system"),
        tools=tuple(data["tools"]) if "tools" in data else None,
        deny=tuple(data.get("deny", ())),
        mocks=tuple(_mock(mock) for mock in data.get("mocks", ())),
        mcp=tuple(_server(server) for server in data.get("mcp", ())),
        expect=task_expect(data),
        timeout=float(data["timeout"]) if "timeout" in data else None,
        script=tuple(_reply(reply) for reply in data["script"]) if "script" in data else None,
        fixtures_dir=fixtures,
        command_timeout=float(data["command_timeout"]) if "command_timeout" in data else None,
        network=bool(data.get("network", False)),
        runs=data.get("runs"),
        min_pass_rate=data.get("min_pass_rate"),
        turn_expect=_turn_expect(data.get("turns", [])),
        user=_user(data["user"]) if "user" in data else None,
        agent=_agent(data["agent"], path) if "agent" in data else None,
        faults=_faults(data["faults"]) if "faults" in data else (),
        inject=injections_of(data),
        attack=attack_expect(data),
    )


def _faults(specs: list[dict[str, Any]]) -> tuple[Fault, ...]:
    from runner.spec.faults import faults_of  # the case model's own imports stay few (tests/test_layout.py)

    return faults_of(specs)


def _agent(agent: str | dict[str, Any], path: Path) -> AgentSpec | str:
    """A case's ``agent``: a name as is, a mapping as the AgentSpec named ``inline``."""
    from runner.spec.agentspec import INLINE, agent_of  # the case model's own imports stay few (tests/test_layout.py)

    return agent if isinstance(agent, str) else agent_of(INLINE, agent, path.parent)


def _turn_expect(turns: list[str | dict[str, Any]]) -> tuple[TurnExpect, ...]:
    """Each turn's ``expect`` (an empty TurnExpect for none); () when no turn has one."""
    found = tuple(turn_expect_of(t.get("expect", {}) if isinstance(t, dict) else {}) for t in turns)
    return () if all(one.empty for one in found) else found



def _user(user: dict[str, Any]) -> SimulatedUser:
    """A validated ``user:`` mapping as a SimulatedUser, its script's text items as ``{content}``."""
    script = user.get("script")
    return SimulatedUser(
        model=user["model"], persona=user["persona"], first=user.get("first"),
        max_turns=int(user.get("max_turns", DEFAULT_USER_TURNS)), stop=user.get("stop", DEFAULT_STOP),
        script=None if script is None else tuple(item if isinstance(item, dict) else {"content": item} for item in script))


def _env_text(value: str | float | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _mock(mock: dict[str, Any]) -> dict[str, Any]:
    """A mock tool with every key present: name, description, parameters, responses."""
    return {"description": "", "parameters": {"type": "object", "properties": {}}, "responses": [], **mock}


MCP_START_TIMEOUT = 30.0  # seconds an MCP server has to start and list its tools, by default


def _server(server: dict[str, Any]) -> dict[str, Any]:
    """An MCP server with every key present: name, command (a tuple or None), url, env (strings), timeout."""
    command = tuple(server["command"]) if "command" in server else None
    env = {name: _env_text(value) for name, value in server.get("env", {}).items()}
    return {"name": server["name"], "command": command, "url": server.get("url"), "env": env,
            "timeout": float(server.get("timeout", MCP_START_TIMEOUT))}


def _reply(reply: dict[str, Any]) -> dict[str, Any]:
    """A script reply whose tool calls all have ``arguments`` (default {})."""
    if "tool_calls" not in reply:
        return reply
    return {**reply, "tool_calls": [{"arguments": {}, **call} for call in reply["tool_calls"]]}
