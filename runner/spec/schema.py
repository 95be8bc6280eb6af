"""The case schema, and validating a case mapping against it: positioned errors worded for YAML authors.

Every problem becomes a CaseFileError at the YAML node it is about, named by its
key path inside the case (``expect.files.calc.py``), inside the defaults
(``defaults.expect``), or ``(file)`` for the file's own shape. The defaults and
each case are checked on their own against the *partial* schema (``required``
dropped wherever mappings merge), so each error points where it was written;
each case merged over the defaults is then checked for those required keys.
The extra rules are what the schema cannot say: ids unique in the file, the
fixture folder exists, every regex compiles.

Whether a value is valid is asked of jsonschema-rs (compiled, much faster);
jsonschema, imported on first need, explains a value it rejects and has
the last word: a value counts as valid when either accepts it.
"""

from __future__ import annotations

import copy
import difflib
import functools
import json
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import jsonschema_rs

from runner.errors import CaseFileError, did_you_mean
from runner.names import ID_PATTERN
from runner.patterns import compile_schema_pattern
from runner.resources import bundled
from runner.spec.homes import home_hint
from runner.spec.positions import Spot, describe, kind_of, written

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator, ValidationError

_NAME_RULES = {
    f"^{ID_PATTERN.pattern}$": "use lowercase letters, digits, '.', '_' and '-', starting with a letter or digit",
    "^[a-zA-Z0-9_-]{1,64}$": "use 1 to 64 letters, digits, '_' and '-'",
    "^[A-Za-z_][A-Za-z0-9_]*$": "use letters, digits and '_', not starting with a digit",
}


def case_schema() -> dict[str, Any]:
    """The case JSON Schema (draft 2020-12), read afresh from the bundled ``schemas/case.schema.json``."""
    return json.loads((bundled("schemas") / "case.schema.json").read_text(encoding="utf-8"))


def case_file_schema() -> dict[str, Any]:
    """The case-file JSON Schema (draft 2020-12), read afresh from the bundled ``schemas/case-file.schema.json``:
    a list of cases or ``{defaults, cases}``, each case by ``$ref`` to ``case.schema.json`` beside it."""
    return json.loads((bundled("schemas") / "case-file.schema.json").read_text(encoding="utf-8"))


@functools.cache
def _schemas() -> tuple[dict[str, Any], dict[str, Any], frozenset[tuple[str, ...]]]:
    """(full schema, partial schema, schema paths of the ``required`` the partial one lacks)."""
    full = case_schema()
    partial = copy.deepcopy(full)
    return full, partial, frozenset(_drop_required(partial, ()))


def schema_validator(schema: dict[str, Any], **options: Any) -> Draft202012Validator:
    """A jsonschema validator of ``schema`` (``options`` go to its constructor) that reads ``pattern``
    as JSON Schema and jsonschema-rs do: ``$`` is the end of the text, so ``"fix\\n"`` is no valid id."""
    return _validator_class()(schema, **options)


@functools.cache
def _validator_class() -> type[Draft202012Validator]:
    """Draft202012Validator with the ``pattern`` keyword of ``compile_schema_pattern``."""
    from jsonschema import (  # slow to import: on first need
        Draft202012Validator,
        ValidationError,
        validators,
    )

    def pattern(
        validator: Draft202012Validator, regex: str, instance: Any, schema: dict[str, Any]
    ) -> Iterator[ValidationError]:
        if validator.is_type(instance, "string") and not compile_schema_pattern(regex).search(instance):
            yield ValidationError(f"{instance!r} does not match {regex!r}")

    return validators.extend(Draft202012Validator, {"pattern": pattern})


@functools.cache
def _validators() -> tuple[Draft202012Validator, Draft202012Validator, frozenset[tuple[str, ...]]]:
    """(full validator, partial validator, schema paths of the ``required`` the partial one lacks)."""
    full, partial, dropped = _schemas()
    return schema_validator(full), schema_validator(partial), dropped


@functools.cache
def compiled() -> tuple[jsonschema_rs.Validator, jsonschema_rs.Validator]:
    """jsonschema-rs validators of (the full schema, the partial schema)."""
    full, partial, _ = _schemas()
    return jsonschema_rs.Draft202012Validator(full), jsonschema_rs.Draft202012Validator(partial)


def surely_valid(validator: jsonschema_rs.Validator, data: Any) -> bool:
    """Whether the compiled ``validator`` accepts ``data``. False is not a verdict: it also
    stands for a value jsonschema-rs cannot take (a date, a non-text key), and jsonschema then judges."""
    try:
        return validator.is_valid(data)
    except ValueError:
        return False


def _drop_required(schema: dict[str, Any], at: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Remove ``required`` from ``schema`` and each mapping merged below it, and an ``anyOf`` of ``required``
    alternatives (``turns`` or ``user``: runner.spec.conversation words that one); return their schema paths."""
    dropped = [(*at, "required")] if schema.pop("required", None) else []
    alternatives = schema.get("anyOf")
    if isinstance(alternatives, list) and all(isinstance(a, dict) and a.keys() == {"required"} for a in alternatives):
        del schema["anyOf"]
        dropped.append((*at, "anyOf"))
    for name, sub in schema.get("properties", {}).items():
        dropped += _drop_required(sub, (*at, "properties", name))
    if isinstance(schema.get("additionalProperties"), dict):
        dropped += _drop_required(schema["additionalProperties"], (*at, "additionalProperties"))
    return dropped


def partial_errors(data: dict[str, Any], spot: Spot) -> list[CaseFileError]:
    """Every schema error of unmerged ``data`` (defaults or a case) but keys required where mappings merge."""
    _, partial, _ = _validators()
    return [one for error in partial.iter_errors(data) for one in schema_errors(error, spot)]


def merged_errors(data: dict[str, Any], case: Spot, defaults: Spot | None) -> list[CaseFileError]:
    """The required keys a merged case still lacks, on the mapping that lacks them (case or defaults)."""
    full, _, dropped = _validators()
    return [
        one
        for error in full.iter_errors(data)
        if error.validator == "required" and tuple(error.schema_path) in dropped
        for one in schema_errors(error, written(list(error.absolute_path), case, defaults))
    ]


def schema_errors(error: ValidationError, spot: Spot) -> list[CaseFileError]:
    """One jsonschema error as CaseFileErrors (one per unknown key; none for a misspelled required key)."""
    path = list(error.absolute_path)
    if error.validator == "additionalProperties":
        known = _schema(error).get("properties", {})
        return [_unknown_key(key, path, _schema(error), spot) for key in _instance(error) if key not in known]
    if error.validator == "required" and not _missing_keys(error):
        return []
    deeper = [e for e in error.context or () if len(e.absolute_path) > len(path)]
    if error.validator == "anyOf" and deeper:  # the value has the right type; its items are wrong
        return [one for e in deeper for one in schema_errors(e, spot)]
    if "propertyNames" in error.schema_path:  # the instance is a key of the mapping at ``path``
        return [spot.error(_message(error), path, at=[*path, _instance(error)], key=True, hint=_hint(error))]
    return [spot.error(_message(error), path, hint=_hint(error))]


def _unknown_key(key: str, path: list[str | int], schema: Mapping[str, Any], spot: Spot) -> CaseFileError:
    """An unknown key, with the allowed key it resembles, or the mapping below where it belongs."""
    allowed = schema.get("properties", {})
    homes = [name for name, sub in allowed.items() if key in sub.get("properties", {})]
    otherwise = f"{key!r} goes under {homes[0]!r}" if homes else "allowed: " + ", ".join(allowed)
    # A key of a neighbouring level is misplaced rather than misspelt.
    hint = home_hint(key, path, _schemas()[0]) or did_you_mean(key, allowed, otherwise)
    return spot.error(f"unknown key {key!r}", path, at=[*path, key], key=True, hint=hint)


def _missing_keys(error: ValidationError) -> list[str]:
    """The required keys a mapping lacks, but for those a misspelled (unknown) key in it stands for."""
    unknown = [key for key in _instance(error) if key not in _schema(error).get("properties", {})]
    absent = [key for key in _value(error) if key not in _instance(error)]
    return [key for key in absent if not difflib.get_close_matches(key, unknown, n=1)]


def _message(error: ValidationError) -> str:
    """The sentence for one validator kind; jsonschema's own text for any other."""
    handler = _MESSAGES.get(str(error.validator))
    return handler(error) if handler else error.message


def _wrong_type(error: ValidationError) -> str:
    return f"expected {describe(_schema(error), _defs())}, got {kind_of(error.instance)}"


def _missing(error: ValidationError) -> str:
    missing = _missing_keys(error)
    return f"missing required key{'s' if len(missing) > 1 else ''} {' and '.join(map(repr, missing))}"


_MESSAGES: dict[str, Callable[[ValidationError], str]] = {
    "type": _wrong_type,
    "anyOf": _wrong_type,
    "required": _missing,
    "pattern": lambda e: f"{e.instance!r} is not a valid name",
    "minimum": lambda e: f"must be at least {e.validator_value}, got {e.instance}",
    "maximum": lambda e: f"must be at most {e.validator_value}, got {e.instance}",
    "exclusiveMinimum": lambda e: f"must be greater than {e.validator_value}, got {e.instance}",
    "minItems": lambda e: "must not be empty" if e.validator_value == 1 else f"needs {e.validator_value} items",
    "minLength": lambda e: "must not be empty",
    "minProperties": lambda e: "must not be empty",
    "const": lambda e: f"must be {json.dumps(e.validator_value)}",
    "enum": lambda e: f"{e.instance!r} is not one of {', '.join(map(repr, _value(e)))}",
}


def _hint(error: ValidationError) -> str:
    if error.validator == "pattern":
        return _NAME_RULES.get(_value(error), f"must match {error.validator_value}")
    if error.validator == "enum" and isinstance(error.instance, str):
        return did_you_mean(error.instance, [v for v in _value(error) if isinstance(v, str)])
    if error.validator == "minProperties":
        return "give " + " or ".join(map(repr, _schema(error).get("properties", {})))
    wants_text = error.validator in ("type", "anyOf") and "a string" in describe(_schema(error), _defs())
    return "put it in quotes to make it text" if wants_text and isinstance(error.instance, (int, float)) else ""


def _schema(error: ValidationError) -> Mapping[str, Any]:
    """The schema whose keyword ``error`` broke; {} for a boolean schema (``false``), which has no keywords."""
    return error.schema if isinstance(error.schema, Mapping) else {}


def _instance(error: ValidationError) -> Any:
    """The value that broke the keyword: any JSON value (typed "maybe unset"; a validator's error has one)."""
    return error.instance


def _value(error: ValidationError) -> Any:
    """The broken keyword's value in the schema (``required``'s keys, ``enum``'s values, ``pattern``'s regex)."""
    return error.validator_value


def _defs() -> dict[str, Any]:
    return _schemas()[0]["$defs"]
