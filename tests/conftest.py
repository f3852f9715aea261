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
    """A migrated-to-nothing, empty database: a SQLite file, or a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'pharaon.db'}"
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
    if is_sqlite(database_url):
        template: Path = request.getfixturevalue("migrated_sqlite")
        shutil.copyfile(template, str(make_url(database_url).database))
    else:
        schema = make_url(database_url).query["options"]
        assert isinstance(schema, str)
        copy: Callable[[str, str], None] = request.getfixturevalue("migrated_postgres")
        copy(database_url, schema.removeprefix("-csearch_path="))
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


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
def migrated_postgres(postgres_database: str) -> Callable[[str, str], None]:
    """``copy(url, schema)``: make the empty ``schema`` of ``url`` what the migrations make
    of one, with the SQL that ``pg_dump`` gives of a schema migrated once for the session
    (tables, indexes, triggers, functions, sequences and the rows the migrations insert)."""
    template = f"migrated_{secrets.token_hex(6)}"
    url = next(postgres_schema(postgres_database, template))
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    dumped = subprocess.run(
        [_pg_tool("pg_dump"), "--schema", template, "--inserts", "--no-owner", "--no-privileges",
         "--no-comments", _libpq(postgres_database)],
        check=True, capture_output=True, text=True, timeout=120,
    ).stdout  # fmt: skip
    statements = "\n".join(
        line
        for line in dumped.splitlines()
        # The schema exists already, with its search path; the dump's session settings
        # would outlive it on the connection; psql's own commands are psql's.
        if not line.startswith(("CREATE SCHEMA", "SET ", "SELECT pg_catalog.set_config", "\\"))
        and not line.startswith("--")
    )

    def copy(url: str, schema: str) -> None:
        with psycopg.connect(_libpq(url), autocommit=True) as conn:
            conn.execute(statements.replace(f"{template}.", f"{schema}.").encode())

    return copy


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
    # keys_dir: the TOTP key file of the operators' tests, never the checkout's var/keys.
    return Settings(
        database_url=database_url,
        allow_test_blocks=True,
        keys_dir=tmp_path / "keys",
        metrics_allow_ips="testclient",  # the TestClient's address scrapes /metrics
    )


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
