"""``expect.response_json``: the final reply is JSON, valid against a JSON Schema, with expectations
on paths into it.

The reply is JSON when all of it, stripped, parses as JSON; else its first fenced code block
(```` ```json ```` or a bare ```` ``` ````) is read instead, as models often wrap JSON so. Then, when
given, ``schema`` (a JSON Schema; its ``$schema`` picks the draft, 2020-12 by default) must accept the
value, and each of ``paths`` (a JMESPath expression, https://jmespath.org/specification.html, to a
value or matcher of runner.spec.matchers, the same as ``trace.args``) must match what the expression
finds. JMESPath gives null for a path that is not there: a null value counts as absent.

Results: ``response_json`` (the reply is JSON), ``response_json.schema``, one ``response_json.paths``
per path; when the reply is no JSON the other two are not made.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from jmespath.exceptions import JMESPathError

from runner.checks.base import CheckContext, CheckResult
from runner.spec.jsonpaths import compiled_path
from runner.spec.matchers import accepts_absence, show, value_mismatch

_FENCE = re.compile(r"^```[ \t]*(?:json)?[ \t]*\n(.*?)^```", re.DOTALL | re.MULTILINE | re.IGNORECASE)
MESSAGE_LIMIT = 200  # characters of a schema error's message, which quotes the reply's values


def reply_json(reply: str) -> tuple[Any, bool]:
    """The JSON value of ``reply`` and whether it came from a fenced code block.

    Raises ValueError with the check's message: ``no reply to read as JSON``, ``response is not JSON:
    Expecting value (line 1, column 1)``."""
    if not reply.strip():
        raise ValueError("no reply to read as JSON")
    try:
        return json.loads(reply), False
    except json.JSONDecodeError as whole:
        fenced = _FENCE.search(reply)
        if fenced is None:
            raise ValueError(f"response is not JSON: {_reason(whole)}") from whole
        try:
            return json.loads(fenced[1]), True
        except json.JSONDecodeError as e:
            raise ValueError(f"response's code block is not JSON: {_reason(e)}") from e


def _reason(error: json.JSONDecodeError) -> str:
    return f"{error.msg} (line {error.lineno}, column {error.colno})"


def check_response_json(spec: Mapping[str, Any], ctx: CheckContext) -> list[CheckResult]:
    """The results of one ``response_json`` spec (``{schema?, paths?}``) on the run's final reply."""
    try:
        value, fenced = reply_json(ctx.trajectory.final_reply)
    except ValueError as e:
        return [CheckResult("response_json", False, str(e))]
    results = [CheckResult("response_json", True, "response is JSON" + (" (a fenced code block)" if fenced else ""))]
    if "schema" in spec:
        results.append(_schema_result(spec["schema"], value))
    results += [_path_result(path, wanted, value) for path, wanted in (spec.get("paths") or {}).items()]
    return results


def _schema_result(schema: Mapping[str, Any], value: Any) -> CheckResult:
    """Whether ``value`` is valid against ``schema``, naming the most relevant error (jsonschema's ``best_match``)."""
    from jsonschema import Draft202012Validator, validators
    from jsonschema.exceptions import best_match

    validator = validators.validator_for(schema, default=Draft202012Validator)(schema)
    error = best_match(validator.iter_errors(value))
    if error is None:
        return CheckResult("response_json.schema", True, "response JSON matches the schema")
    message = error.message if len(error.message) <= MESSAGE_LIMIT else error.message[: MESSAGE_LIMIT - 3] + "..."
    return CheckResult("response_json.schema", False, f"response JSON does not match the schema at {error.json_path}: {message}")


def _path_result(path: str, wanted: Any, value: Any) -> CheckResult:
    """Whether what ``path`` finds in ``value`` matches ``wanted`` (a value or matcher)."""
    try:
        found = compiled_path(path).search(value)
    except JMESPathError as e:  # a type error the data makes: length() of a number
        return CheckResult("response_json.paths", False, f"response JSON {path}: {e}")
    if found is None:
        ok = accepts_absence(wanted)
        return CheckResult("response_json.paths", ok, f"response JSON {path} is absent" if ok else f"response JSON {path}: missing")
    reason = value_mismatch(wanted, found, where=path)
    if reason is not None:
        return CheckResult("response_json.paths", False, f"response JSON {reason}")
    return CheckResult("response_json.paths", True, f"response JSON {path}: {show(found)}")
