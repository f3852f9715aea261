"""The banned-gamblers list over HTTP, on both databases: an admin's identity check of a
person on the list is refused 403 ``banned`` and the account suspended; a verified player the
daily check finds is suspended too; the back office's search and file say ``banned``, the
player only ``suspended``."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine

from pharaon.service import banned
from pharaon.service.clock import utcnow
from pharaon.settings import Settings
from pharaon.store.transactions import Transactions
from tests.conftest import Player
from tests.web.test_measures import _admin
from tests.web.test_withdrawals import verify

# The conftest Player's birth date, and test_withdrawals' document's names (Martin, Ana Lucía).
LIST = b"last_name,first_names,birth_date\nMARTIN,Ana Lucia,1990-05-17\n"


def _load(engine: Engine) -> None:
    db = Transactions(engine)
    try:
        db.write(banned.load, listed=banned.read_list(LIST), actor="test", now=utcnow())
    finally:
        db.close()


def _file(client: TestClient, admin: dict[str, str], player: Player) -> Any:
    r = client.get(f"/api/v1/operator/players/{player.player_id}", headers=admin)
    assert r.status_code == 200, r.text
    return r.json()["player"]


def test_a_banned_person_is_refused_and_shown_to_operators_only(
    client: TestClient, engine: Engine, settings: Settings, player: Player
) -> None:
    admin = _admin(client, engine, settings)
    bob = Player(client, "bob@example.org")
    assert verify(client, admin, bob).status_code == 201  # before the list came
    assert _file(client, admin, player)["banned"] is False
    _load(engine)

    refused = verify(client, admin, player, first_names="ana  lucía")
    assert (refused.status_code, refused.json()["error"]) == (403, "banned")
    shown = _file(client, admin, player)
    assert (shown["banned"], shown["suspended"], shown["verified_at"]) == (True, True, None)
    found = client.get("/api/v1/operator/players", params={"email": "ana@"}, headers=admin)
    assert [(p["player_id"], p["banned"]) for p in found.json()] == [(player.player_id, True)]

    # The player is told the account is suspended, never why.
    me = player.get("/me")
    assert me.json()["suspended"] is True
    assert "banned" not in me.text
    deposit = player.post("/deposits", {"amount_cents": 100}, key="d1")
    assert (deposit.status_code, deposit.json()["error"]) == (403, "suspended")
    assert "banned" not in deposit.text
    assert "interdit" not in deposit.text.lower()

    # The daily check finds the player verified before the list came (the server's chores may
    # have run it since the load: then it is not due any more, and bob is banned already).
    db = Transactions(engine)
    try:
        assert db.write(banned.check_if_due, now=utcnow()) in {0, 1}
    finally:
        db.close()
    shown = _file(client, admin, bob)
    assert (shown["banned"], shown["suspended"]) == (True, True)
    play = bob.play()
    assert (play.status_code, play.json()["error"]) == (403, "suspended")


def test_a_name_written_otherwise_is_still_refused(
    client: TestClient, engine: Engine, settings: Settings, player: Player
) -> None:
    """Issue 37: the names on the document compared as the list's are, whatever separates
    their words or however their letters are typed; a letter apart is another person."""
    admin = _admin(client, engine, settings)
    bob = Player(client, "bob@example.org")
    _load(engine)
    near = verify(client, admin, bob, last_name="Martín", first_names="Ana Lucio")
    assert near.status_code == 201, near.text
    refused = verify(client, admin, player, last_name="ＭＡＲＴＩＮ", first_names="Ana_Lucía")
    assert (refused.status_code, refused.json()["error"]) == (403, "banned")
    assert _file(client, admin, player)["banned"] is True
