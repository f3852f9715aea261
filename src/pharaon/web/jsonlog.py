"""The server's log as JSON lines on stderr: the access log (logger ``pharaon.access``, one
line a request, written by :mod:`pharaon.web.observe`) in place of uvicorn's, and the
program's own warnings and errors (loggers ``pharaon.*``: a 5xx with its cause, web/errors.py).
Standard library only: uvicorn's supervisor loads it too."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

ACCESS_LOGGER = "pharaon.access"


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``time`` (ISO 8601, UTC), then an access record's fields (its
    ``access`` dict), or any other record's level, logger and message."""

    def format(self, record: logging.LogRecord) -> str:
        when = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        line: dict[str, Any] = {"time": when.replace("+00:00", "Z")}
        access = getattr(record, "access", None)
        if isinstance(access, dict):
            line.update(access)
        else:
            line.update(level=record.levelname, logger=record.name, message=record.getMessage())
            request_id = getattr(record, "request_id", None)
            if request_id is not None:
                line["request_id"] = request_id
            if record.exc_info:
                line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def log_config(base: dict[str, Any]) -> dict[str, Any]:
    """``base`` (uvicorn's ``logging.config`` dictionary) with the access log and the program's
    own log added: JSON lines on stderr (the access log at level INFO, the rest at WARNING), not
    passed on to the root logger."""
    return {
        **base,
        "formatters": {**base.get("formatters", {}), "pharaon_json": {"()": JsonFormatter}},
        "handlers": {
            **base.get("handlers", {}),
            "pharaon_access": {
                "class": "logging.StreamHandler",
                "formatter": "pharaon_json",
                "stream": "ext://sys.stderr",
            },
        },
        "loggers": {
            **base.get("loggers", {}),
            ACCESS_LOGGER: {"handlers": ["pharaon_access"], "level": "INFO", "propagate": False},
            "pharaon": {"handlers": ["pharaon_access"], "level": "WARNING", "propagate": False},
        },
    }
