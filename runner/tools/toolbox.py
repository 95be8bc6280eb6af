"""The builtin tools and the Toolbox: what a case offers the model, and the one place tool calls run."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Collection, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from runner.sandbox.started import CommandNotStarted
from runner.spec.matchers import normalize
from runner.spec.offered import expand, offered_tools
from runner.text import cap_text, encodable
from runner.tools.base import Tool, ToolContext, ToolError, ToolResult
from runner.tools.redefine import own_arguments, redefine
from runner.tools.registry import BUILTINS, Builtin

if TYPE_CHECKING:  # the case loader imports the tool names, so no import cycle at run time
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

    from runner.spec.case import Case
    from runner.spec.tooldefs import ToolDefs
    from runner.tools.faults import Injector


def builtin_tool(row: Builtin) -> Tool:
    """The Tool of a row of runner.tools.registry.BUILTINS: its facts, and the function its ``run`` names."""
    module, _, function = row.run.partition(":")
    return Tool(row.name, row.description, row.parameters, getattr(importlib.import_module(module), function))


BUILTIN_TOOLS: dict[str, Tool] = {name: builtin_tool(row) for name, row in BUILTINS.items()}


def _error(message: str, refused: bool = False) -> ToolResult:
    return ToolResult(cap_text(encodable(f"Error: {message}")), is_error=True, refused=refused)


def _validator(tool: Tool) -> Draft202012Validator:
    """The validator of ``tool``'s arguments: its ``parameters`` (draft 2020-12), each ``enum`` as its
    ``enum_match`` says."""
    from jsonschema import Draft202012Validator  # imported here: `list` and `validate` start faster without it

    kind = _normalized_enums() if tool.enum_match == "normalized" else Draft202012Validator
    return kind(tool.parameters)


@functools.cache
def _normalized_enums() -> type[Draft202012Validator]:
    """Draft 2020-12 whose ``enum`` also takes a string equal to a string member once both are
    normalised as BFCL's checker compares strings (``"OPEN"`` is in ``["open", "closed"]``)."""
    from jsonschema import Draft202012Validator, validators

    exact = Draft202012Validator.VALIDATORS["enum"]

    def enum(checker: Any, members: Any, instance: Any, schema: Any) -> Iterator[Any]:
        wanted = normalize(instance) if isinstance(instance, str) else None
        if wanted is None or not any(isinstance(m, str) and normalize(m) == wanted for m in members):
            yield from exact(checker, members, instance, schema)

    return validators.extend(Draft202012Validator, {"enum": enum})


def _describe(error: ValidationError) -> str:
    """A schema violation as ``key/path: message``, or just the message at the top level."""
    where = "/".join(str(part) for part in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


class Toolbox:
    """The tools offered in one run, with the names refused there.

    ``offered`` lists the tool names in the order of ``tools``. ``call`` never
    raises: every failure becomes a ToolResult starting with ``Error:``, and
    every result is capped at 30,000 characters (head and tail kept). Every
    result goes into the next model request, which is UTF-8: a lone surrogate in
    it is escaped (runner.text.encodable), so a byte of a file name that is not
    UTF-8 reads ``\\xff``. ``faults``, when given, alters the results of the calls it fits (runner.tools.faults).
    """

    def __init__(self, tools: Mapping[str, Tool], deny: Collection[str], context: ToolContext,
                 faults: Injector | None = None) -> None:
        self.tools = dict(tools)
        self.faults = faults
        self.deny = frozenset(deny)
        self.context = context
        self.offered: list[str] = list(self.tools)
        self._validators = {name: _validator(tool) for name, tool in self.tools.items()}

    def specs(self) -> list[dict[str, Any]]:
        """The OpenAI function specs (``{"type": "function", "function": {...}}``) of the offered tools."""
        return [self.tools[name].spec() for name in self.offered]

    def own(self, name: str, arguments: dict[str, Any] | None) -> dict[str, Any] | None:
        """A call's ``arguments`` under tool ``name``'s own parameter names, where the arm renamed some
        (runner.tools.redefine): what the record's steps and the trace checks read."""
        tool = self.tools.get(name)
        return own_arguments(arguments, tool.renamed) if tool is not None and arguments is not None else arguments

    def call(
        self, name: str, arguments: dict[str, Any] | None, arguments_error: str | None = None
    ) -> ToolResult:
        """Run tool ``name`` with ``arguments`` (None: no arguments given).

        ``arguments_error`` says why the model's arguments were unusable (e.g. invalid JSON).
        A call of an unknown or denied tool, or with arguments the tool's schema rejects, is
        refused: the result says why and has ``refused`` set. Raises runner.sandbox.started.CommandNotStarted
        when the machine or the sandbox could not start a command: not the call's result, the run's end.
        """
        if name not in self.tools:
            available = ", ".join(n for n in self.offered if n not in self.deny) or "(none)"
            return _error(f"unknown tool {name!r}; available: {available}", refused=True)
        if name in self.deny:
            return _error(f"tool {name!r} is denied in this case", refused=True)
        if arguments_error is not None:
            return _error(arguments_error)
        arguments = {} if arguments is None else arguments
        from jsonschema.exceptions import best_match

        try:
            problem = best_match(self._validators[name].iter_errors(arguments))
        except Exception as e:  # noqa: BLE001 (the boundary: a schema's bug must reach the model, not crash the run)
            return _error(f"{type(e).__name__}: {e}")
        if problem is not None:
            return _error(f"invalid arguments for {name}: {_describe(problem)}", refused=True)
        if self.faults is None:
            return self._run(name, arguments)
        return self.faults.apply(name, arguments, functools.partial(self._run, name, arguments))

    def _run(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        try:
            return ToolResult(cap_text(encodable(self.tools[name].run(arguments, self.context))))
        except ToolError as e:
            return _error(str(e))
        except CommandNotStarted:  # the machine's failure, not the call's: it ends the run (start_failed)
            raise
        except Exception as e:  # noqa: BLE001 (the boundary: a tool's bug must reach the model, not crash the run)
            return _error(f"{type(e).__name__}: {e}")


def build_toolbox(case: Case, context: ToolContext, extra: Mapping[str, Tool] = {},
                  defs: ToolDefs | None = None, faults: Injector | None = None) -> Toolbox:
    """The Toolbox of ``case``: ``case.tools`` by name (default every builtin, then every ``extra``),
    with ``extra`` (e.g. the case's mocks, then its MCP tools) overriding a builtin of the same name;
    ``case.deny`` refused; ``faults`` applied to its calls. A ``SERVER__*`` pattern in either stands for every
    such tool of ``extra``. ``defs``, the arm's tool-definition file, says which are shown and how
    (runner.tools.redefine).

    Raises ValueError for a name in ``case.tools`` or ``case.deny`` that is no known tool.
    """
    known = {**BUILTIN_TOOLS, **extra}
    names, deny = expand(offered_tools(case.tools, extra), list(known)), expand(case.deny, list(known))
    unknown = [name for name in (*names, *deny) if name not in known]
    if unknown:
        raise ValueError(
            f"{case.full_id}: unknown tool {', '.join(map(repr, unknown))}; known: {', '.join(known)}"
        )
    return Toolbox(redefine({name: known[name] for name in names}, defs), deny, context, faults)
