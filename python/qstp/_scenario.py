"""A scenario given to :func:`qstp.run` (a path, TOML text or a dict) read into a native plan."""

from __future__ import annotations

import datetime
import json
import math
import os
from typing import Any, Mapping, Optional, Union

from . import _native
from ._errors import ScenarioError

Scenario = Union[str, "os.PathLike[str]", Mapping[str, Any]]
DurationLike = Union[str, int, float, datetime.timedelta]

__all__ = ["plan", "toml_text", "duration_text"]


def plan(
    scenario: Scenario,
    runs: Optional[int] = None,
    seed: Optional[int] = None,
    duration: Optional[DurationLike] = None,
) -> _native.Plan:
    """Read ``scenario`` with the overrides into a plan; raises :class:`ScenarioError`."""
    runs = _unsigned("runs", runs, 32)
    seed = _unsigned("seed", seed, 64)
    text = duration_text(duration)
    if isinstance(scenario, Mapping):
        return _native.Plan.parse(toml_text(scenario), "<dict>", runs, seed, text)
    if isinstance(scenario, os.PathLike):
        return _native.Plan.load(os.fspath(scenario), runs, seed, text)
    if isinstance(scenario, str):
        # A path holds neither a line break nor '='; a scenario always has both or at least '='.
        if "\n" in scenario or "=" in scenario:
            return _native.Plan.parse(scenario, "<string>", runs, seed, text)
        return _native.Plan.load(scenario, runs, seed, text)
    raise TypeError(
        f"scenario must be a path, TOML text or a dict, not {type(scenario).__name__}"
    )


def _unsigned(key: str, value: Optional[int], bits: int) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScenarioError(f"{key}: expected an integer, found {value!r}", key)
    if not 0 <= value < 2**bits:
        raise ScenarioError(f"{key}: {value} is outside 0..2^{bits}", key)
    return value


def duration_text(duration: Optional[DurationLike]) -> Optional[str]:
    """A duration override as the scenario format writes it: ``"60s"`` stays as it is, a number
    or a ``timedelta`` is seconds."""
    if duration is None or isinstance(duration, str):
        return duration
    if isinstance(duration, datetime.timedelta):
        duration = duration.total_seconds()
    if isinstance(duration, bool) or not isinstance(duration, (int, float)):
        raise ScenarioError(
            f"duration: expected a string such as '60s' or seconds, found {duration!r}",
            "duration",
        )
    return f"{duration!r}s"


def toml_text(table: Mapping[str, Any]) -> str:
    """``table`` as a TOML document: keys in the dict's order (a sweep's order matters), plain
    values first, then tables, then arrays of tables."""
    lines: list[str] = []
    _table(table, [], lines)
    return "\n".join(lines).lstrip("\n") + "\n"


def _is_table_array(value: Any) -> bool:
    return (
        isinstance(value, (list, tuple))
        and len(value) > 0
        and all(isinstance(v, Mapping) for v in value)
    )


def _table(table: Mapping[str, Any], path: list[str], lines: list[str]) -> None:
    for key, value in table.items():
        if not isinstance(value, Mapping) and not _is_table_array(value):
            lines.append(f"{_key(key)} = {_value(value, path + [key])}")
    for key, value in table.items():
        if isinstance(value, Mapping):
            lines.append("")
            lines.append(f"[{'.'.join(_key(k) for k in path + [key])}]")
            _table(value, path + [key], lines)
    for key, value in table.items():
        if _is_table_array(value):
            for item in value:
                lines.append("")
                lines.append(f"[[{'.'.join(_key(k) for k in path + [key])}]]")
                _table(item, path + [key], lines)


def _key(key: Any) -> str:
    if not isinstance(key, str):
        raise ScenarioError(f"{key!r}: keys must be strings", str(key))
    bare = key and all(c.isascii() and (c.isalnum() or c in "-_") for c in key)
    return key if bare else _string(key)


def _string(text: str) -> str:
    # JSON's escapes (\", \\, \n, \uXXXX, ...) are TOML basic-string escapes too.
    return json.dumps(text)


def _value(value: Any, path: list[str]) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v, path) for v in value) + "]"
    if isinstance(value, Mapping):
        items = ", ".join(f"{_key(k)} = {_value(v, path + [k])}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    key = ".".join(str(k) for k in path)
    raise ScenarioError(
        f"<dict>: {key}: {type(value).__name__} has no TOML form (use a string, number, "
        "bool, list or dict)",
        key,
    )
