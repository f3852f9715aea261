"""Fixtures for the store, service and web tests: the same tests on SQLite and PostgreSQL.

PostgreSQL is at ``PHARAON_TEST_POSTGRES_URL`` (default: 127.0.0.1:5432, user postgres,
database test). The session makes its own database with a random name and drops it after;
each test gets a fresh schema in it. When PostgreSQL is unreachable the postgres tests FAIL if
``CI=true`` and are skipped with the reason otherwise.
"""

from __future__ import annotations

import fcntl
import glob
import os
import secrets
import shutil
import subprocess
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from pharaon.pool.blockfile import Block, write_block
from pharaon.pool.design import test_design
from pharaon.pool.generate import generate_block
from pharaon.service import approvals, loading, passwords
from pharaon.service.clock import utcnow
from pharaon.settings import Settings
from pharaon.store.engine import is_sqlite, make_engine, make_sessionmaker
from pharaon.store.migrate import upgrade
from pharaon.store.transactions import Transactions
from pharaon.web.app import create_app
from tests.web.cluster import Cluster, throwaway_cluster
from tests.web.live import MODERATORS

with warnings.catch_warnings():
    # Starlette 1.10 prefers httpx2 for its TestClient; httpx (pinned) works the same.
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient

# The suite's players and operators hash their passwords with argon2's cheapest parameters: a
# setting for tests only, never the default (tests/service/test_passwords.py tests the
# production ones). The variable reaches the apps, the server processes and the commands; the
# services the tests call directly are told here.
FAST_HASHING: passwords.Hashing = "fast-insecure-for-tests"
os.environ["PHARAON_PASSWORD_HASHING"] = FAST_HASHING
passwords.use(FAST_HASHING)

POSTGRES_URL = os.environ.get(
    "PHARAON_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


def _libpq(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """The URL of a fresh PostgreSQL database for this test session, dropped after."""
    try:
        with psycopg.connect(_libpq(POSTGRES_URL), connect_timeout=5, autocommit=True) as conn:
            name = f"pharaon_test_{secrets.token_hex(6)}"
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as exc:
        reason = f"PostgreSQL unreachable at {POSTGRES_URL}: {str(exc).strip().splitlines()[0]}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{reason} (CI=true: PostgreSQL is required)")
        pytest.skip(reason)
    url = make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    yield url
    with psycopg.connect(_libpq(POSTGRES_URL), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A migrated-to-nothing, empty database: a SQLite file, or a fresh PostgreSQL schema --
    except for a test that asks for :func:`engine` (and not :func:`migrated`), which gets a
    PostgreSQL schema at the newest schema already (:class:`PostgresSchemas`)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'pharaon.db'}"
        return
    if "engine" in request.fixturenames and "migrated" not in request.fixturenames:
        schemas: PostgresSchemas = request.getfixturevalue("migrated_postgres")
        schema = schemas.take()
        yield schemas.url(schema)
        schemas.give_back(schema)
        return
    yield from postgres_schema(request.getfixturevalue("postgres_database"))


def postgres_schema(base: str, schema: str | None = None) -> Iterator[str]:
    """The URL of a fresh schema (``schema``, or a new name) in the PostgreSQL database
    ``base``, dropped after."""
    schema = schema or f"t_{secrets.token_hex(6)}"
    with psycopg.connect(_libpq(base), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    yield f"{base}?options={quote(f'-csearch_path={schema}')}"
    with psycopg.connect(_libpq(base), autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture
def engine(database_url: str, request: pytest.FixtureRequest) -> Iterator[Engine]:
    """An engine on a database at the newest schema: a copy of one migrated once for the
    session (:func:`migrated_sqlite`, :func:`migrated_postgres`), as the migrations leave it;
    ``tests/store/test_migrations_match_models.py`` checks both the copy and a database
    migrated on its own."""
    engine = newest_engine(database_url, request)
    yield engine
    engine.dispose()


def newest_engine(database_url: str, request: pytest.FixtureRequest) -> Engine:
    """An engine on the empty database ``database_url``, made a copy of the schema migrated once
    for the session (see :func:`engine`)."""
    if is_sqlite(database_url):
        template: Path = request.getfixturevalue("migrated_sqlite")
        shutil.copyfile(template, str(make_url(database_url).database))
    else:
        schema = make_url(database_url).query["options"]
        assert isinstance(schema, str)
        schemas: PostgresSchemas = request.getfixturevalue("migrated_postgres")
        schemas.fill(schema.removeprefix("-csearch_path="))
    return make_engine(database_url)


@pytest.fixture(scope="module", params=BACKENDS)
def module_engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Engine]:
    """:func:`engine`, shared by a module's tests (each on both databases): for tests that each
    check that what they do changes nothing, so that one set-up serves them all."""
    folder = tmp_path_factory.mktemp("module-db")
    if request.param == "sqlite":
        urls: Iterator[str] = iter([f"sqlite:///{folder / 'pharaon.db'}"])
    else:
        urls = postgres_schema(request.getfixturevalue("postgres_database"))
    url = next(urls)
    engine = newest_engine(url, request)
    yield engine
    engine.dispose()
    next(urls, None)  # the schema dropped


def app_settings(database_url: str, folder: Path) -> Settings:
    """The settings of a test app on ``database_url``, its files under ``folder``."""
    # keys_dir: the TOTP key file of the operators' tests, never the checkout's var/keys.
    return Settings(
        database_url=database_url,
        allow_test_blocks=True,
        keys_dir=folder / "keys",
        metrics_allow_ips="testclient",  # the TestClient's address scrapes /metrics
    )


@pytest.fixture
def migrated(database_url: str) -> Iterator[Engine]:
    """An engine on a database that the migrations bring to the newest schema, themselves."""
    engine = make_engine(database_url)
    upgrade(engine)
    yield engine
    engine.dispose()


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated once for the session: each test's database is a copy of it."""
    path = tmp_path_factory.mktemp("migrated") / "pharaon.db"
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    engine.dispose()  # the last connection closed: the WAL folded into the file
    return path


@pytest.fixture(scope="session")
def migrated_postgres(postgres_database: str) -> PostgresSchemas:
    """The schemas at the newest schema of this test process (:class:`PostgresSchemas`)."""
    return PostgresSchemas(postgres_database)


# What a schema is made of, compared before it is used again: tables and their columns,
# privileges and options, triggers (and whether they are enabled), functions, constraints and
# indexes; its own name left out.
_SCHEMA_PRINT = """
SELECT md5(string_agg(replace(x, %(schema)s || '.', ''), ',' ORDER BY x)) FROM (
    SELECT concat_ws(':', c.relname, c.relkind, c.relacl, c.reloptions) AS x
    FROM pg_class c WHERE c.relnamespace = %(schema)s::regnamespace
  UNION ALL
    SELECT concat_ws(':', c.relname, a.attname, format_type(a.atttypid, a.atttypmod),
                     a.attnotnull, pg_get_expr(d.adbin, d.adrelid))
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE c.relnamespace = %(schema)s::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL
    SELECT concat_ws(':', t.tgenabled, pg_get_triggerdef(t.oid))
    FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
    WHERE c.relnamespace = %(schema)s::regnamespace
  UNION ALL
    SELECT concat_ws(':', p.proname, p.prosrc, p.proconfig)
    FROM pg_proc p WHERE p.pronamespace = %(schema)s::regnamespace
  UNION ALL
    SELECT concat_ws(':', o.conname, pg_get_constraintdef(o.oid))
    FROM pg_constraint o WHERE o.connamespace = %(schema)s::regnamespace
  UNION ALL
    SELECT pg_get_indexdef(i.indexrelid)
    FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
    WHERE c.relnamespace = %(schema)s::regnamespace
) parts
"""
_SCHEMA_BYTES = """
SELECT coalesce(sum(pg_total_relation_size(oid)), 0) FROM pg_class
WHERE relnamespace = %(schema)s::regnamespace AND relkind = 'r'
"""
_REUSED_UP_TO_BYTES = 16 << 20  # past this (a real block loaded), a new schema is cheaper


class PostgresSchemas:
    """PostgreSQL schemas that the migrations' work made, for one test process.

    A schema is migrated once (the template); a new one is made from the SQL that ``pg_dump``
    gives of it (tables, indexes, triggers, functions, sequences and the rows the migrations
    insert). A test's schema, once the test is over, is used again if it is still made as it
    was (its print, :data:`_SCHEMA_PRINT`, unchanged) and small: its rows deleted, the
    template's rows put back and its sequences set as the template's, in one round trip;
    otherwise it is dropped. ``tests/store/test_migrations_match_models.py`` checks a copy
    against the models and its rows against a fresh migration."""

    def __init__(self, database: str) -> None:
        self.database = database
        self.template = f"migrated_{secrets.token_hex(6)}"
        next(postgres_schema(database, self.template))  # dropped with the session's database
        engine = make_engine(self.url(self.template))
        upgrade(engine)
        engine.dispose()
        dumped = subprocess.run(
            [_pg_tool("pg_dump"), "--schema", self.template, "--inserts", "--no-owner",
             "--no-privileges", "--no-comments", _libpq(database)],
            check=True, capture_output=True, text=True, timeout=120,
        ).stdout  # fmt: skip
        self._statements = "\n".join(
            line
            for line in dumped.splitlines()
            # The schema exists already, with its search path; the dump's session settings
            # would outlive it on the connection; psql's own commands are psql's.
            if not line.startswith(("CREATE SCHEMA", "SET ", "SELECT pg_catalog.set_config", "\\"))
            and not line.startswith("--")
        )
        with psycopg.connect(_libpq(database), autocommit=True) as conn:
            named = {"schema": self.template}
            self._tables = [
                str(name)
                for (name,) in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = %(schema)s", named
                )
            ]
            self._sequences = [
                str(name)
                for (name,) in conn.execute(
                    "SELECT sequencename FROM pg_sequences WHERE schemaname = %(schema)s", named
                )
            ]
        self._free: list[str] = []
        self._prints: dict[str, str] = {}  # a filled schema's print when it was made

    def url(self, schema: str) -> str:
        return f"{self.database}?options={quote(f'-csearch_path={schema}')}"

    def fill(self, schema: str) -> None:
        """Make the empty ``schema`` what the migrations make of one; nothing if it is one
        of these schemas already (:meth:`take`)."""
        if schema in self._prints:
            return
        with psycopg.connect(_libpq(self.database), autocommit=True) as conn:
            conn.execute(self._statements.replace(f"{self.template}.", f"{schema}.").encode())
            self._prints[schema] = self._print(conn, schema)

    def take(self) -> str:
        """A schema at the newest schema, with only the migrations' rows: one given back, or
        a new one."""
        if self._free:
            return self._free.pop()
        schema = f"t_{secrets.token_hex(6)}"
        with psycopg.connect(_libpq(self.database), autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        self.fill(schema)
        return schema

    def give_back(self, schema: str) -> None:
        """Once its test is over: ``schema`` made as the template again, or dropped."""
        with psycopg.connect(_libpq(self.database), autocommit=True) as conn:
            conn.execute("SET lock_timeout = '5s'")
            named = {"schema": schema}
            try:
                row = conn.execute(_SCHEMA_BYTES, named).fetchone()
                if (
                    row is not None
                    and row[0] <= _REUSED_UP_TO_BYTES
                    and self._print(conn, schema) == self._prints[schema]
                ):
                    conn.execute(self._reset(schema).encode())
                    self._free.append(schema)
                    return
            except psycopg.Error:
                # A lock still held, or no right to turn the triggers off: dropped instead.
                conn.execute("ROLLBACK")
            del self._prints[schema]
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')

    def _print(self, conn: psycopg.Connection[Any], schema: str) -> str:
        row = conn.execute(_SCHEMA_PRINT, {"schema": schema}).fetchone()
        assert row is not None
        return str(row[0])

    def _reset(self, schema: str) -> str:
        # Triggers (the audit log's append-only one, the foreign keys') are off for these
        # statements, in one transaction: the rows go, the template's come back.
        source, target = f'"{self.template}"', f'"{schema}"'
        return "\n".join(
            [
                "BEGIN;",
                "SET LOCAL session_replication_role = replica;",
                *(f'DELETE FROM {target}."{table}";' for table in self._tables),
                *(
                    f'INSERT INTO {target}."{table}" SELECT * FROM {source}."{table}";'
                    for table in self._tables
                ),
                *(
                    f"SELECT setval('{target}.\"{name}\"', last_value, is_called) "
                    f'FROM {source}."{name}";'
                    for name in self._sequences
                ),
                "COMMIT;",
            ]
        )


def _pg_tool(name: str) -> str:
    """A PostgreSQL client program: the newest installed, else the one on the PATH."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else name


@pytest.fixture
def db(engine: Engine) -> Iterator[Transactions]:
    """The two kinds of transaction on ``engine`` (store/transactions.py), as the commands use
    them."""
    transactions = Transactions(engine)
    yield transactions
    transactions.close()


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return app_settings(database_url, tmp_path)


# Fixed keys: reproducible test blocks (never keys of a real block).
VENDOR = "00112233445566778899aabbccddeeff"
OPERATOR = "f0e1d2c3b4a5968778695a4b3c2d1e0f"


@pytest.fixture(scope="session")
def real_blocks(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> dict[int, Path]:
    """One regulation block per price from :data:`VENDOR` and :data:`OPERATOR`'s keys, written
    to disk: generated once for the session, whichever of its xdist workers asks first (the
    others wait for the files, under a lock)."""
    root = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        root = root.parent  # the session's folder, shared by its workers
    folder = root / "real-blocks"
    folder.mkdir(exist_ok=True)
    out: dict[int, Path] = {}
    with (folder / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for price in (100, 200, 300):
            path = out[price] = folder / f"block-{price}.parquet"
            if not path.exists():
                block = generate_block(
                    price, emission="T1", block_number=price // 100, vendor_key=VENDOR,
                    operator_key=OPERATOR,
                )  # fmt: skip
                write_block(block, path.with_suffix(".partial"))
                path.with_suffix(".partial").rename(path)
    return out


def make_block(price_cents: int = 100, *, size: int = 200, number: int = 1) -> Block:
    """A small valid test block (marked test in its manifest)."""
    return generate_block(price_cents, design=test_design(size), block_number=number)


def approved(session: Session, block_id: int) -> int:
    """Approve loaded block ``block_id`` as ``auditor:test`` (service/approvals.py), so it goes
    on sale unless a block is open at its price; its id."""
    approvals.verify_and_approve(
        session=session, block_id=block_id, actor="auditor:test", now=utcnow()
    )
    return block_id


def load_for_sale(engine: Engine, block: Block, **kwargs: Any) -> int:
    """Load ``block`` (a test block allowed, as ``test``, now; ``kwargs`` to
    :func:`pharaon.service.loading.load_block`) and approve it, in one transaction; its id."""
    with make_sessionmaker(engine).begin() as session:
        options: dict[str, Any] = {"allow_test": True, "actor": "test", "now": utcnow()}
        block_id = loading.load_block(session=session, block=block, **(options | kwargs))
        return approved(session, block_id)


BlockLoader = Callable[..., int]


@pytest.fixture
def load(engine: Engine) -> BlockLoader:
    """``load(price_cents=100, size=200, number=1)``: make and load a test block, approved
    by an auditor (on sale unless a block is open at its price); its id."""

    def _load(price_cents: int = 100, *, size: int = 200, number: int = 1) -> int:
        return load_for_sale(engine, make_block(price_cents, size=size, number=number))

    return _load


@pytest.fixture
def client(engine: Engine, settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings, engine=engine)) as client:
        yield client


class Player:
    """A registered, logged-in player seen through the API with a bearer token; its moderators
    set (tests/web/live.py :data:`MODERATORS`) unless ``moderators`` is false."""

    def __init__(
        self,
        client: TestClient,
        email: str,
        password: str = "correct horse",
        *,
        moderators: bool = True,
    ) -> None:
        self.client = client
        self.email = email
        self.password = password
        r = client.post(
            "/api/v1/players",
            json={"email": email, "password": password, "birth_date": "1990-05-17"},
        )
        assert r.status_code == 201, r.text
        self.player_id: int = r.json()["player_id"]
        r = client.post("/api/v1/sessions", json={"email": email, "password": password})
        assert r.status_code == 200, r.text
        self.token: str = r.json()["token"]
        client.cookies.clear()  # this player speaks with its bearer token only
        self.headers = {"Authorization": f"Bearer {self.token}"}
        if moderators:
            r = self.put("/me/limits", MODERATORS)
            assert r.status_code == 200, r.text

    def post(self, path: str, body: Any = None, key: str | None = None) -> Any:
        headers = dict(self.headers)
        if key is not None:
            headers["Idempotency-Key"] = key
        return self.client.post(f"/api/v1{path}", json=body, headers=headers)

    def get(self, path: str, **params: Any) -> Any:
        return self.client.get(f"/api/v1{path}", headers=self.headers, params=params)

    def put(self, path: str, body: Any) -> Any:
        return self.client.put(f"/api/v1{path}", json=body, headers=self.headers)

    def deposit(self, amount_cents: int) -> int:
        r = self.post("/deposits", {"amount_cents": amount_cents}, key=secrets.token_hex(8))
        assert r.status_code == 201, r.text
        return int(r.json()["balance_cents"])

    def play(self, stake_cents: int = 100, mode: str = "auto", key: str | None = None) -> Any:
        return self.post(
            "/plays", {"stake_cents": stake_cents, "mode": mode}, key=key or secrets.token_hex(8)
        )

    def balance(self) -> int:
        return int(self.get("/me").json()["balance_cents"])


@pytest.fixture
def player(client: TestClient) -> Player:
    return Player(client, "ana@example.org")


@pytest.fixture
def other(client: TestClient) -> Player:
    return Player(client, "bob@example.org")


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    """A throwaway PostgreSQL cluster (``tests/web/cluster.py``); skipped without ``initdb``
    (failed when ``CI=true``)."""
    yield from throwaway_cluster()
