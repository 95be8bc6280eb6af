"""The scripted provider: replays the replies written in a case's ``script:``.

It is how tooltrial runs offline (CI, demos, checking a suite's checks): the
agent loop, tools, workspace and checks are all real; only the model is a
recording. It reports token usage only where the script records it (a
``--record``ed live run does); otherwise none (null, never guessed).

``KIND`` is its row of the provider kinds' table (runner.providers.registry): the one name
``scripted``, which resolves without litellm, reads no key, replays a simulated user's own
``user.script``, and cannot judge.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from runner.kinds import ErrorKind
from runner.names import SCRIPTED
from runner.providers.base import Completion, Provider, ProviderError, ToolCall, Usage
from runner.providers.kind import ProviderKind, ProviderSpec
from runner.providers.parse import ReplyKind, parse_arguments, reply_kind
from runner.text import plural

if TYPE_CHECKING:
    from runner.providers.probe import Diagnosis
    from runner.spec.case import Case
    from runner.spec.config import Config

# why the scripted provider is refused as a judge (--judge, judge: in tooltrial.yml, expect.judge.model)
NOT_A_JUDGE = "the scripted provider cannot judge: it replies with the case's script, never with a verdict"


class ScriptExhausted(ProviderError):
    """The agent asked for more replies than the script holds: the agent went off script, not the API down."""

    kind = ErrorKind.SCRIPT_EXHAUSTED


class ScriptedProvider:
    """Serves ``script`` items in order, one per model request.

    Args:
        script: items ``{content?: str, tool_calls?: [{name, arguments}], usage?: {...},
            finish_reason?: str}`` as in the case file. ``arguments`` is an object, or the raw
            text a model sent, read as a live provider reads it (text that is no JSON object
            makes the call an error).
        turns: the case's count of turns, which the error of an exhausted script names (a comma in
            ``turns: [a, b]`` makes two); None where a simulated user's turns vary.

    Raises ScriptExhausted on the request after the last item.
    """

    name = SCRIPTED

    def __init__(self, script: Sequence[Mapping[str, Any]], turns: int | None = None) -> None:
        self._script = list(script)
        self._next = 0
        self._turns = turns
        self._unanswered: list[int] = []  # the 1-based replies that were no answer, so the loop asked again

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], deadline: float | None = None
    ) -> Completion:
        """The next script item; ``deadline`` is unused: a scripted reply takes no time."""
        if self._next >= len(self._script):
            raise ScriptExhausted(f"script exhausted: the model was asked for reply {self._next + 1} "
                                  f"but the case's script has {len(self._script)}{self._why()}")
        item = self._script[self._next]
        self._next += 1
        calls = tuple(_call(f"call_{self._next}_{i}", c) for i, c in enumerate(item.get("tool_calls") or ()))
        completion = Completion(
            content=item.get("content"),
            tool_calls=calls,
            finish_reason=item.get("finish_reason", _finish_reason(calls)),
            usage=Usage(**item["usage"]) if "usage" in item else None,
        )
        if reply_kind(completion) is ReplyKind.EMPTY:
            self._unanswered.append(self._next)
        return completion

    def _why(self) -> str:
        """Why the script ran out, for its error: `` (the case has 1 turn; each ends at a reply without tool
        calls; reply 1 was empty and asked again: ...)``; the replies that were no answer (runner.run.agent asks
        again, docs/providers.md) are named, since each takes a script item and ends no turn."""
        parts = [f"the case has {plural(self._turns, 'turn')}; each ends at a reply without tool calls"
                 if self._turns is not None else ""]
        if self._unanswered:
            numbers = [str(n) for n in self._unanswered]
            named = numbers[0] if len(numbers) == 1 else f"{', '.join(numbers[:-1])} and {numbers[-1]}"
            were = ("reply " + named + " was") if len(numbers) == 1 else ("replies " + named + " were")
            parts.append(f"{were} empty and asked again: a reply with no text and no tool call is no answer "
                         "and ends no turn")
        shown = "; ".join(p for p in parts if p)
        return f" ({shown})" if shown else ""


def _finish_reason(calls: Sequence[ToolCall]) -> str:
    """What a model says when it stops: ``tool_calls`` when it asked for tools, else ``stop``."""
    return "tool_calls" if calls else "stop"


def _call(call_id: str, call: Mapping[str, Any]) -> ToolCall:
    """A script's tool call, its arguments read the way a live provider reads them."""
    arguments, error, raw, _ = parse_arguments(call.get("arguments"))
    return ToolCall(id=call_id, name=str(call["name"]), arguments=arguments, error=error, raw_arguments=raw)


def script_reply(completion: Completion) -> dict[str, Any]:
    """One model reply as a ``script:`` item that makes this provider reply the same.

    Calls whose arguments did not parse keep the raw text; usage is kept where reported, and the
    finish reason where it is not the one this provider would give (``tool_calls`` or ``stop``).
    """
    reply: dict[str, Any] = {}
    if completion.content or not completion.tool_calls:
        reply["content"] = completion.content or ""
    if completion.tool_calls:
        reply["tool_calls"] = [
            {"name": c.name, "arguments": c.arguments if c.arguments is not None else c.raw_arguments or ""}
            for c in completion.tool_calls
        ]
    if completion.usage is not None:
        reply["usage"] = {k: v for k, v in vars(completion.usage).items() if v is not None}
    if completion.finish_reason != _finish_reason(completion.tool_calls):
        reply["finish_reason"] = completion.finish_reason
    return reply


def _create(case: Case) -> Provider:
    if case.script is None:
        raise ProviderError(f"case {case.full_id} has no script: the scripted provider needs one")
    return ScriptedProvider(case.script, None if case.user is not None else len(case.turns))  # a simulated user's turns vary


def _resolve(name: str, config: Config | None, verbose: bool, stream: bool) -> ProviderSpec:
    return ProviderSpec(SCRIPTED, _create)


def _probe(name: str, config: Config | None, call: bool, environ: Mapping[str, str], verbose: bool,
           refused: str | None) -> Diagnosis:
    from runner.providers.probe import OK, Diagnosis, Finding

    offline = "none needed: the scripted provider replies from each case's script"
    return Diagnosis(name, SCRIPTED, (Finding("key", OK, offline), Finding("endpoint", OK, "none: offline"),
                                     Finding("tools", OK, "the script's tool calls")))


def _user(case: Case) -> Provider:
    assert case.user is not None
    return ScriptedProvider(case.user.script or ())


KIND = ProviderKind(SCRIPTED, "the built-in offline provider", re.compile(re.escape(SCRIPTED)), _resolve, _probe,
                    not_a_judge=NOT_A_JUDGE, user=_user)
