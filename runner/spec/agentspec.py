"""External agent programs as users write them: a case's ``agent:`` (a name from tooltrial.yml's
``agents:``, or the mapping itself), ``run --agent NAME|FILE.yml``, and the rules their schema
(``schemas/case.schema.json`` ``$defs/agentProgram``) cannot say.

An agent mapping::

    command: python3 {{ here }}/agent.py     # bash -c, in the workspace; a Jinja template
    input: argument                          # argument (default) | stdin | template ({{ turn }} in command)
    timeout: 120                             # seconds per invocation (default: what is left of the run's)
    env: {AGENT_LOG: debug}                  # more environment for it
    model: gpt-4o                            # the model name it is told to ask for (default tooltrial)
"""

from __future__ import annotations

import dataclasses
import functools
import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.errors import CaseFileError, Location, UserError, UserErrors, did_you_mean, in_file_order
from runner.resources import bundled
from runner.spec.positions import Spot, written

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

    from runner.spec.case import Case

INPUTS = ("argument", "stdin", "template")
NAMES = ("turn", "model", "workspace", "here")  # what a command template may use
DEFAULT_MODEL = "tooltrial"
INLINE = "inline"  # the name of an agent a case writes out in full


@dataclass(frozen=True)
class AgentSpec:
    """An external agent program: how tooltrial starts it for each turn of a case.

    Attributes:
        name: its key under tooltrial.yml's ``agents``, the stem of its ``--agent`` file, or ``inline``.
        command: the shell command line (``bash -c``, run in the workspace), a Jinja template of
            ``turn``, ``model``, ``workspace`` and ``here``, with a ``shell`` filter (shlex.quote).
        input: how the turn reaches it: ``argument`` (appended, shell-quoted), ``stdin``, or ``template``
            (the command places ``{{ turn }}`` itself).
        timeout: seconds per invocation, None for what is left of the run's time.
        env: more environment variables for it (the endpoint's variables win over these).
        model: the model name it is told to ask for (``TOOLTRIAL_MODEL``); the endpoint answers any.
        here: the folder of the file that defines it, absolute (``{{ here }}`` in ``command``).
    """

    name: str
    command: str
    input: str = "argument"
    timeout: float | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    model: str = DEFAULT_MODEL
    here: str = ""


def agent_of(name: str, data: Mapping[str, Any], here: Path) -> AgentSpec:
    """A validated agent mapping as an AgentSpec named ``name``, defined in a file in folder ``here``."""
    env = {key: ("true" if value else "false") if isinstance(value, bool) else str(value)
           for key, value in (data.get("env") or {}).items()}
    timeout = data.get("timeout")
    return AgentSpec(name, data["command"], data.get("input", "argument"), None if timeout is None else float(timeout),
                     env, data.get("model", DEFAULT_MODEL), str(here.resolve()))


def agent_rule_errors(data: Any, path: Sequence[str | int], spot: Spot) -> list[CaseFileError]:
    """What is wrong with agent mapping ``data`` at ``path`` in ``spot`` that its schema cannot say: a
    ``command`` that is no Jinja template, uses a name other than NAMES, or (``input: template``)
    never places ``{{ turn }}``."""
    if not isinstance(data, dict) or not isinstance(data.get("command"), str):
        return []
    from jinja2 import Environment, TemplateSyntaxError, meta  # only a file with an agent pays for it

    at = [*path, "command"]
    environment = Environment()
    environment.filters["shell"] = shlex.quote  # as the run renders it (runner.run.prompts)
    try:
        used = meta.find_undeclared_variables(environment.parse(data["command"]))
    except TemplateSyntaxError as e:
        return [spot.error(f"the command is no valid template: {e.message}", at,
                           hint="Jinja syntax: {{ turn | shell }}; write {{ '{{' }} for a literal {{")]
    errors = [spot.error(f"the command uses {name!r}, which a command template does not have", at,
                         hint=did_you_mean(name, NAMES, "it has " + ", ".join(NAMES)))
              for name in sorted(used - set(NAMES))]
    if data.get("input") == "template" and "turn" not in used:
        errors.append(spot.error("input: template, but the command never places {{ turn }}", at,
                                 hint="write {{ turn | shell }} where the turn goes, or use input: argument or stdin"))
    return errors


def case_agent_errors(case: dict[str, Any], spot: Spot, defaults: Spot | None) -> list[CaseFileError]:
    """The agent rules for a merged case's inline ``agent`` mapping, where it was written."""
    return agent_rule_errors(case.get("agent"), ["agent"], written(["agent"], spot, defaults))


def resolve_agent(case: Case, agents: Mapping[str, AgentSpec], config: Path | None) -> AgentSpec | None:
    """The AgentSpec of ``case``'s ``agent``: the spec it holds, or the one its name names in
    ``agents`` (tooltrial.yml's, from ``config``). Raises UserError at the case for an unknown name."""
    if not isinstance(case.agent, str):
        return case.agent
    if case.agent in agents:
        return agents[case.agent]
    where = f"in {config}" if config is not None else "(no tooltrial.yml was found)"
    hint = did_you_mean(case.agent, agents, "define it under agents: in tooltrial.yml, or give --agent FILE.yml")
    raise UserError(f"unknown agent {case.agent!r} {where}", Location(str(case.source), case.line),
                    f"{case.full_id}.agent", hint)


def agent_option(value: str, agents: Mapping[str, AgentSpec], config: Path | None) -> AgentSpec:
    """``run --agent VALUE``: the agent ``agents`` (tooltrial.yml's, from ``config``) names so, else the
    file VALUE (``.yml``/``.yaml``, or any file that is there; see load_agent_file). Raises UserError for
    a name that is neither (did-you-mean over ``agents``), UserErrors for a bad file."""
    if value in agents:
        return agents[value]
    path = Path(value)
    if path.is_file():
        return load_agent_file(path)
    if path.suffix in (".yml", ".yaml"):
        raise UserError(f"--agent {value}: no such file", hint="give the path of a .yml file holding one agent mapping")
    where = f"{config}'s agents" if config is not None else "tooltrial.yml's agents (no tooltrial.yml was found)"
    raise UserError(f"--agent {value!r} is neither one of {where} nor a file",
                    hint=did_you_mean(value, agents, "define it under agents: in tooltrial.yml, or give FILE.yml"))


def with_agents(cases: Sequence[Case], option: str | None, agents: Mapping[str, AgentSpec],
                config: Path | None) -> list[Case]:
    """``cases`` with each ``agent`` a spec: ``--agent``'s (``option``) for every case when given, else
    each named one resolved (resolve_agent). Raises UserError for a name that names none."""
    if option is not None:
        chosen = agent_option(option, agents, config)
        return [dataclasses.replace(case, agent=chosen) for case in cases]
    return [dataclasses.replace(case, agent=resolve_agent(case, agents, config)) if isinstance(case.agent, str) else case
            for case in cases]


@functools.cache
def agent_schema() -> dict[str, Any]:
    """The agent mapping's JSON Schema, ``$defs/agentProgram`` of the bundled case schema."""
    schema = json.loads((bundled("schemas") / "case.schema.json").read_text(encoding="utf-8"))
    return {"$schema": schema["$schema"], **schema["$defs"]["agentProgram"]}


@functools.cache
def _validator() -> Draft202012Validator:
    from runner.spec.schema import schema_validator

    return schema_validator(agent_schema())


def load_agent_file(path: Path) -> AgentSpec:
    """``--agent FILE.yml``: the one agent mapping the file holds, named after its stem. Raises
    UserErrors (file:line:col, key, hint) for a file that is unreadable or not a valid agent mapping."""
    from runner.spec.schema import schema_errors
    from runner.spec.source import parse, to_plain

    file = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read the agent file: {e}", hint="--agent takes a name from tooltrial.yml's agents, "
                        "or a .yml file holding one agent mapping") from e
    root = parse(text, file)
    data = to_plain(root, file)
    spot = Spot(file, root, empty="(file)")
    if not isinstance(data, dict):
        raise UserErrors([spot.error("expected one agent mapping", hint="e.g. command: python3 agent.py")])
    errors: list[UserError] = [e for error in _validator().iter_errors(data) for e in schema_errors(error, spot)]
    errors += agent_rule_errors(data, [], spot)
    if errors:
        raise UserErrors(in_file_order(errors))
    return agent_of(path.stem, data, path.parent)
