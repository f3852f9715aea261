"""The Alembic migrations build the schema the SQLAlchemy models describe, on both databases.

Alembic's autogenerate compares the migrated, empty database with ``Base.metadata`` column
by column (types, nullability, server defaults), and its indexes, unique constraints and
foreign keys; any difference fails the test with the list of them.
"""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, Integer, MetaData

from pharaon.store.tables import Base

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


def test_the_migrations_build_what_the_models_describe(engine: Engine) -> None:
    differences = _differences(engine)
    listing = "\n".join(f"  {d!r}" for d in differences)
    assert not differences, f"the migrated schema differs from the models:\n{listing}"


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
