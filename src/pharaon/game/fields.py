"""Typed look-ups in parsed TOML tables, with errors that name the field and what came."""

from __future__ import annotations

from typing import Any

_MISSING: Any = object()


def field(
    table: dict[str, Any],
    key: str,
    kind: type,
    where: str,
    *,
    error: type[ValueError],
    default: Any = _MISSING,
) -> Any:
    """``table[key]`` checked to be a ``kind`` (a bool is no int); ``error`` names the problem."""
    if key not in table:
        if default is not _MISSING:
            return default
        raise error(f"{where}: missing key {key!r}")
    value = table[key]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise error(f"{where}: {key} must be an integer, got {value!r}")
    if not isinstance(value, kind):
        raise error(f"{where}: {key} must be {kind.__name__}, got {value!r}")
    return value
