"""The operations tests (several servers, a proxy, a failover, a restore drill) are timed
against the wall clock: they run after the others, with the machine to themselves (marker
``alone``, Makefile ``test``)."""

from __future__ import annotations

from pathlib import Path

import pytest

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in item.path.parents:
            item.add_marker(pytest.mark.alone)
