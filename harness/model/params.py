"""Turning user-supplied values (TOML, `--set k=v`) into a suite's validated Params.

Every failure becomes a UserError naming the suite, the key, the offending value and
what is allowed, so bad input never shows a pydantic traceback.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from harness.errors import UserError


def parse_assignments(items: list[str] | None) -> dict[str, list[str]]:
    """`["workers=1,2", "sync=delta"]` -> `{"workers": ["1", "2"], "sync": ["delta"]}`."""
    out: dict[str, list[str]] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UserError(f"--set expects key=value or key=v1,v2, got {item!r}")
        values = [v.strip() for v in value.split(",")]
        if any(v == "" for v in values):
            raise UserError(f"--set {key}: empty value in {item!r}; expects key=value or key=v1,v2")
        out[key] = values
    return out


def parse_list(flag: str, text: str | None) -> list[str] | None:
    if text is None:
        return None
    values = [v.strip() for v in text.split(",")]
    if not values or any(v == "" for v in values):
        raise UserError(f"{flag} expects a comma-separated list, got {text!r}")
    return values


def allowed(model: type[BaseModel], key: str) -> str:
    """A short human description of what a field accepts."""
    field = model.model_fields.get(key)
    if field is None:
        return "one of the keys: " + ", ".join(model.model_fields)
    schema = model.model_json_schema().get("properties", {}).get(key, {})
    return describe_schema(schema)


def describe_schema(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "one of " + ", ".join(map(str, schema["enum"]))
    if "const" in schema:
        return f"{schema['const']}"
    if "anyOf" in schema:
        return " or ".join(describe_schema(s) for s in schema["anyOf"])
    kind = schema.get("type", "any value")
    bounds = []
    for word, sign in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<")):
        if word in schema:
            bounds.append(f"{sign} {schema[word]}")
    return kind + (" " + " and ".join(bounds) if bounds else "")


def validate(suite_name: str, model: type[BaseModel], raw: dict[str, Any]) -> BaseModel:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise UserError(format_validation_error(suite_name, model, exc)) from None


def format_validation_error(suite_name: str, model: type[BaseModel], exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        key = ".".join(str(part) for part in err["loc"]) or "(params)"
        top = str(err["loc"][0]) if err["loc"] else ""
        if err["type"] == "extra_forbidden":
            lines.append(f"unknown key {key!r} for suite {suite_name!r}; allowed keys: {', '.join(model.model_fields)}")
        else:
            lines.append(
                f"suite {suite_name!r}: {key}={err.get('input')!r} is invalid ({err['msg']}); "
                f"allowed: {allowed(model, top)}"
            )
    return "\n".join(lines)


def describe_params(model: type[BaseModel]) -> list[dict[str, str]]:
    """Rows for `harness suites`: name, type/allowed, default, unit, description."""
    props = model.model_json_schema().get("properties", {})
    rows = []
    for name, field in model.model_fields.items():
        schema = props.get(name, {})
        rows.append(
            {
                "name": name,
                "allowed": describe_schema(schema),
                "default": repr(field.default),
                "unit": str((field.json_schema_extra or {}).get("unit", ""))
                if isinstance(field.json_schema_extra, dict)
                else "",
                "description": field.description or "",
            }
        )
    return rows
