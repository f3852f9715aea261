"""The Alembic migrations build the schema the SQLAlchemy models describe, on both databases.

Alembic's autogenerate compares the migrated, empty database with ``Base.metadata`` column
by column (types, nullability, server defaults), and its indexes, unique constraints and
foreign keys; any difference fails the test with the list of them.
"""

from __future__ import annotations

from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, Integer, MetaData, text

from pharaon.store.engine import make_engine
from pharaon.store.migrate import upgrade
from pharaon.store.tables import Base
from tests.conftest import postgres_schema

_ALEMBIC_TABLE = "alembic_version"


def _include(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
    """Alembic's own bookkeeping table is no model's."""
    return not (type_ == "table" and name == _ALEMBIC_TABLE)


def _differences(engine: Engine) -> list[Any]:
    with engine.connect() as connection:
        context = MigrationContext.configure(
            connection,
            opts={
                "compare_type": True,
                "compare_server_default": True,
                "include_object": _include,
            },
        )
        return list(compare_metadata(context, Base.metadata))


def test_the_migrations_build_what_the_models_describe(migrated: Engine) -> None:
    differences = _differences(migrated)
    listing = "\n".join(f"  {d!r}" for d in differences)
    assert not differences, f"the migrated schema differs from the models:\n{listing}"


def test_the_tests_copy_of_the_migrated_schema_is_the_same(
    engine: Engine, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The database each test gets (tests/conftest.py ``engine``: a copy of one migrated once
    for the session) is what the migrations build, the rows they insert included."""
    differences = _differences(engine)
    listing = "\n".join(f"  {d!r}" for d in differences)
    assert not differences, f"the tests' copy differs from the models:\n{listing}"
    with ExitStack() as stack:
        if engine.dialect.name == "sqlite":
            url = f"sqlite:///{tmp_path / 'fresh.db'}"
        else:
            base = request.getfixturevalue("postgres_database")
            url = stack.enter_context(contextmanager(postgres_schema)(base))
        fresh = make_engine(url)
        stack.callback(fresh.dispose)
        upgrade(fresh)
        for name in [*(t.name for t in Base.metadata.sorted_tables), _ALEMBIC_TABLE]:
            query = text(f'SELECT * FROM "{name}" ORDER BY 1')
            with engine.connect() as copy, fresh.connect() as made:
                assert copy.execute(query).all() == made.execute(query).all(), name


def test_the_comparison_sees_a_type_a_nullability_an_index_and_a_foreign_key(
    engine: Engine,
) -> None:
    """The check has teeth: models changed in each of the four ways are all reported."""
    altered = MetaData(naming_convention=Base.metadata.naming_convention)
    for table in Base.metadata.sorted_tables:
        table.to_metadata(altered)
    units, plays = altered.tables["units"], altered.tables["plays"]
    units.c.lot_cents.type = Integer()
    plays.c.block_id.nullable = not plays.c.block_id.nullable
    index = next(iter(plays.indexes))
    plays.indexes.discard(index)
    foreign_key = next(iter(plays.foreign_key_constraints))
    plays.constraints.discard(foreign_key)
    with engine.connect() as connection:
        context = MigrationContext.configure(
            connection, opts={"compare_type": True, "include_object": _include}
        )
        found = repr(compare_metadata(context, altered))
    assert "modify_type" in found
    assert "lot_cents" in found
    assert "modify_nullable" in found
    assert "remove_index" in found
    assert index.name is not None
    assert index.name in found
    assert "remove_fk" in found
