"""Named implementations a suite chooses between, such as its backends.

A suite keeps one `Choices` per knob: each entry is a name and where its implementation
lives ("module:attribute", imported on first use, so listing suites stays cheap). The
suite's Params field comes from it (`choices.field(...)`): values are validated against
the registry when a cell's params are checked, and `harness suites` lists what is
registered at that moment. Adding a backend is one module and one `add` line; a plugin
(HARNESS_PLUGINS) may add one from outside the suite before any params are validated.
"""

from __future__ import annotations

import importlib
from typing import Annotated, Any

from pydantic import AfterValidator, Field


class Choices:
    def __init__(self, knob: str) -> None:
        self.knob = knob
        self._targets: dict[str, str | Any] = {}
        self._loaded: dict[str, Any] = {}

    def add(self, name: str, target: str | Any) -> None:
        """Register `name`: an object, or "module:attribute" to import when first used."""
        if name in self._targets:
            raise ValueError(f"{self.knob} {name!r} is registered already")
        self._targets[name] = target

    def names(self) -> tuple[str, ...]:
        return tuple(self._targets)

    def get(self, name: str) -> Any:
        if name not in self._targets:
            raise KeyError(f"{self.knob}={name!r}: allowed are {', '.join(self.names())}")
        if name not in self._loaded:
            target = self._targets[name]
            if isinstance(target, str):
                module, _, attribute = target.partition(":")
                target = getattr(importlib.import_module(module), attribute)
            self._loaded[name] = target
        return self._loaded[name]

    def _check(self, value: str) -> str:
        if value not in self._targets:
            raise ValueError(f"allowed: {', '.join(self.names())}")
        return value

    def field(self, default: str, description: str) -> Any:
        """A Params annotation with its default: a str checked against the registry, whose
        JSON schema lists the registered names (what `harness suites` shows). Use it as
        `backend: BACKENDS.field("sequential", "where iterations run")` (no `= default`)."""

        def schema(extra: dict[str, Any]) -> None:
            extra["enum"] = list(self.names())

        return Annotated[
            str, AfterValidator(self._check), Field(default, description=description, json_schema_extra=schema)
        ]
