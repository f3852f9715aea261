"""Fixtures of the web tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.web.cluster import Cluster, throwaway_cluster


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    """A throwaway PostgreSQL cluster (``tests/web/cluster.py``); skipped without ``initdb``
    (failed when ``CI=true``)."""
    yield from throwaway_cluster()
