"""The rules of ``expect.response_json`` the case schema cannot say, checked when the case is loaded:
its ``schema`` is a JSON Schema (draft 2020-12), and each key of its ``paths`` is a JMESPath
expression (https://jmespath.org/specification.html) that compiles. Each error is positioned where
the value is written, the case or its file's defaults. A ``paths`` value whose one key is close to a
matcher name is told as in ``trace.args``.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import jmespath
from jmespath.exceptions import (
    ArityError,
    EmptyExpressionError,
    IncompleteExpressionError,
    JMESPathError,
    LexerError,
    ParseError,
    UnknownFunctionError,
)
from jmespath.parser import ParsedResult

from runner.errors import CaseFileError
from runner.spec.positions import Spot, written
from runner.spec.schemacheck import schema_problem
from runner.spec.tracerules import misspelt_matchers

KIND = "response_json"
_PATH_HINT = "write a JMESPath expression: items[0].name, data.\"odd-key\", length(items)"
_FIELDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


@functools.lru_cache(maxsize=1024)
def compiled_path(expression: str) -> ParsedResult:
    """``expression`` compiled as JMESPath, once per distinct text. Raises JMESPathError (a ValueError)."""
    return jmespath.compile(expression)


def path_problem(expression: str) -> str | None:
    """Why ``expression`` is no JMESPath expression (``Unknown token $ at column 2``), or None. A call
    of a function JMESPath has not, or with the wrong number of arguments, is found by searching an
    empty object (a type error there depends on the data, and is the check's to report)."""
    try:
        compiled_path(expression).search({})
    except (UnknownFunctionError, ArityError) as e:
        return f"invalid JMESPath {expression!r}: {e}"
    except EmptyExpressionError:
        return "invalid JMESPath '': the expression is empty"
    except IncompleteExpressionError:
        return f"invalid JMESPath {expression!r}: the expression ends too early"
    except LexerError as e:
        return f"invalid JMESPath {expression!r}: {e.message} at column {e.lex_position + 1}"
    except ParseError as e:
        return f"invalid JMESPath {expression!r}: unexpected {e.token_value!r} at column {e.lex_position + 1}"
    except JMESPathError:  # a type error on the empty object: the data decides
        return None
    return None


def response_json_errors(case: dict[str, Any], spot: Spot, defaults: Spot | None) -> list[CaseFileError]:
    """Each error of the case's ``expect.response_json``: a ``schema`` that is no JSON Schema, a
    ``paths`` key that is no JMESPath expression; and, as in ``trace.args`` (runner.spec.tracerules
    ``misspelt_matchers``), a ``paths`` value with a misspelt matcher name (``{normalised: paris}``): an error
    when ``schema`` types what the path finds other than ``object`` (found for a chain of field names), else a
    warning."""
    expect = case.get("expect")
    spec = expect.get(KIND) if isinstance(expect, dict) else None
    if not isinstance(spec, dict):
        return []
    at: list[str | int] = ["expect", KIND]
    errors = []
    if isinstance(spec.get("schema"), dict):
        problem = schema_problem(spec["schema"])
        if problem is not None:
            errors.append(written([*at, "schema"], spot, defaults).error(problem, [*at, "schema"]))
    for expression, wanted in (spec["paths"] if isinstance(spec.get("paths"), dict) else {}).items():
        problem = path_problem(expression)
        path = [*at, "paths", expression]
        if problem is not None:
            errors.append(written(path, spot, defaults).error(problem, path, key=True, hint=_PATH_HINT))
            continue
        errors += misspelt_matchers(wanted, _schema_at(spec.get("schema"), expression), path, spot, defaults,
                                    subject="reply")
    return errors


def _schema_at(schema: Any, expression: str) -> Any:
    """The subschema ``schema`` gives the value ``expression`` finds when that is a chain of plain field names
    (``city``, ``trip.city``) through ``properties``, else None (not known here)."""
    if not _FIELDS.fullmatch(expression):
        return None
    for name in expression.split("."):
        properties = schema.get("properties") if isinstance(schema, dict) else None
        schema = properties.get(name) if isinstance(properties, dict) else None
    return schema
