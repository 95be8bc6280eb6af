"""Faults applied where a tool result is produced (runner.tools.toolbox.Toolbox.call), for builtins, mocks and MCP
tools alike: the first declared fault (runner.spec.faults) that fits a call replaces or alters its result, and the
result says which fault it got (``ToolResult.fault``). An external agent's own tools never reach the Toolbox, so
no fault reaches them.

A fault with a ``probability`` under 1 fires when the draw for the call is below it: the draw is the first 8 bytes
of SHA-256(``seed|case|run|tool|n|fault index``) as a fraction of 2**64, so the same seed, case and run number draw
the same faults on every replay, whatever else runs at once.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from runner.spec.matchers import arguments_mismatch
from runner.text import cap_text, encodable
from runner.tools.base import ToolContext, ToolResult

if TYPE_CHECKING:
    from runner.spec.faults import Fault

MALFORMED_HEAD = 40  # characters of the real result a ``malformed_json`` garbage result carries


def draw(seed: int, key: str, tool: str, n: int, index: int) -> float:
    """The call's draw in [0, 1): SHA-256 of ``seed|key|tool|n|index`` (its first 8 bytes over 2**64)."""
    text = f"{seed}|{key}|{tool}|{n}|{index}".encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "big") / 2**64


def wrong_types(value: Any) -> Any:
    """``value`` with each leaf of another JSON type: a string as its length, a number as a string, a boolean as
    ``"yes"``/``"no"``, null as 0; a list as its length; an object's values each so."""
    if isinstance(value, dict):
        return {key: wrong_types(item) for key, item in value.items()}
    if isinstance(value, list):
        return len(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return len(value)
    if value is None:
        return 0
    return str(value)


class Injector:
    """The faults of one run: ``faults`` tried in order on each call the Toolbox lets run, numbered per tool.

    ``key`` names the run in the draws (``group/id#run``); ``seed`` is the run's seed; ``context`` gives the
    deadline and Ctrl-C that cut a ``slow`` or ``timeout`` fault's wait short.
    """

    def __init__(self, faults: Sequence[Fault], seed: int, key: str, context: ToolContext) -> None:
        self.faults, self.seed, self.key, self.context = tuple(faults), seed, key, context
        self._counts: Counter[str] = Counter()
        self._last: dict[str, str] = {}  # each tool's last real result: a ``stale`` garbage result without ``result``

    def pick(self, name: str, arguments: dict[str, Any]) -> Fault | None:
        """The fault this call of ``name`` gets, None for none; each call counts once, in call order."""
        self._counts[name] += 1
        n = self._counts[name]
        for index, fault in enumerate(self.faults):
            if fault.tool not in (name, "*") or (fault.calls and n not in fault.calls):
                continue
            if fault.when is not None and arguments_mismatch(fault.when, arguments) is not None:
                continue
            if fault.probability >= 1 or draw(self.seed, self.key, name, n, index) < fault.probability:
                return fault
        return None

    def apply(self, name: str, arguments: dict[str, Any], run: Callable[[], ToolResult]) -> ToolResult:
        """The result of a call of ``name`` that ``run`` makes, under the fault it gets (``fault`` set), if any.
        ``error``, ``timeout`` and ``stale`` faults do not run the tool; the others alter its real result."""
        fault = self.pick(name, arguments)
        if fault is None:
            return self._real(name, run)
        if fault.kind == "error":
            return _text(f"Error: {fault.message or f'{name}: temporarily unavailable'}", fault, error=True)
        if fault.kind == "timeout":
            self._wait(fault.seconds)
            return _text(f"Error: {name} timed out after {fault.seconds:g} s and was cut", fault, error=True)
        if fault.kind == "garbage" and fault.form == "stale":
            return _text(fault.result if fault.result is not None else self._last.get(name, ""), fault)
        if fault.kind == "slow":
            self._wait(fault.seconds)
            return dataclasses.replace(self._real(name, run), fault=fault.kind)
        real = self._real(name, run)
        if fault.kind == "empty":
            return _text("", fault)
        if fault.kind == "truncated":
            return _text(real.content[:fault.at], fault, error=real.is_error)
        if fault.form == "wrong_types":
            try:
                parsed = json.loads(real.content)
            except ValueError:
                parsed = {"result": real.content}
            return _text(json.dumps(wrong_types(parsed), ensure_ascii=False), fault)
        return _text('{"result": ' + json.dumps(real.content[:MALFORMED_HEAD], ensure_ascii=False)[:-1], fault)

    def _real(self, name: str, run: Callable[[], ToolResult]) -> ToolResult:
        result = run()
        self._last[name] = result.content
        return result

    def _wait(self, seconds: float) -> None:
        """Wait ``seconds``, cut short at the run's deadline or on Ctrl-C."""
        left = seconds if self.context.deadline is None else min(seconds, self.context.deadline - time.monotonic())
        if left <= 0:
            return
        if self.context.cancel is not None:
            self.context.cancel.wait(left)
        else:
            time.sleep(left)


def _text(content: str, fault: Fault, error: bool = False) -> ToolResult:
    return ToolResult(cap_text(encodable(content)), is_error=error, fault=fault.kind)
