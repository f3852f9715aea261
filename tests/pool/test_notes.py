"""Signed checkpoints (pharaon.pool.notes): the C2SP formats byte for byte, against the
reference implementation's vectors and against the ones docs/proofs.md gives."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from pharaon.pool import notes, tlog

DOCS = Path(__file__).resolve().parents[2] / "docs" / "proofs.md"

# golang.org/x/mod/sumdb/note's example key and note, and the one of c2sp.org/signed-note.
GO_SIGNER = "AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"  # base64(0x01 ‖ seed)
GO_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
GO_TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)
GO_LINE = (
    "— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotp"
    "RZb6KE6RyyBwJnAM=\n"
)
SPEC_VKEY = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"
SPEC_NOTE = (
    "This is an example message.\n\n— example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2"
    "ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n"
)

# docs/proofs.md's vectors: records whose chain hashes are 32 bytes of 01, 02, 03; the log's
# key the seed 00 01 … 1f, the witness's 20 21 … 3f, cosigning at 1700000000.
ORIGIN = "pharaon.example/audit-log"
LOG_SEED = bytes(range(32))
WITNESS = "regulator.example/witness"
WITNESS_SEED = bytes(range(32, 64))
DOC = {
    "leaf1": "dcffe786ded16d283c663846ad0c4ff26558fccde36ca9d30b2ea19eade9fc0e",
    "leaf2": "cba8c596120bdb69debbd923d92cba948bde7c7d06a465a1bb7d98d3116038fa",
    "leaf3": "acaa04663a8547a2f70c60cc18f9378796b13c4f9a08f70d6adae662365b30c6",
    "n12": "3a066e0f40c6a1981ebfa60d2411625d0517ae22c2fc8c7c1784ff8a75c78565",
    "root3": "df896896c799531f1fd1e556cea26a6989ab06853bcbfdd3e4f5097a611f658f",
    "body": "pharaon.example/audit-log\n3\n34lolseZUx8f0eVWzqJqaYmrBoU7y/3T5PUJemEfZY8=\n",
    "log_vkey": "pharaon.example/audit-log+3859476a+AQOhB7/zzhC+HXDdGOdLwJln5NYwm6UNXx3chmQSVTG4",
    "log_line": "— pharaon.example/audit-log OFlHahYHVwZoLEfFPR2OEnK12E50noGFZVAYIrh1m++aqg9bZkfvU"
    "ViikeyITazeTGrxVCCUaXUBY9FW+KT7oLycBgg=\n",
    "witness_vkey": "regulator.example/witness+8257febe+"
    "BCmsuuFBvMrwsi4alNNNC8c2HlJtC/4SyJeUvJMilm3X",
    "witness_line": "— regulator.example/witness glf+vgAAAABlU/EAC9GVwp6G67eQzLx1pWmFI5uvErfaFqPy1"
    "7Zqltk3DEZE7QNw3FwNbOTt5pwBiaH+S9g6yFhyN2vIRqzIU+PUCA==\n",
}


def test_signing_is_the_reference_implementations() -> None:
    seed = base64.b64decode(GO_SIGNER)
    assert seed[0] == notes.ED25519
    signer = notes.Signer("PeterNeumann", seed[1:])
    assert signer.verifier.vkey == GO_VKEY
    assert signer.sign(GO_TEXT) == GO_LINE
    note = notes.parse(GO_TEXT + "\n" + GO_LINE)
    assert note.text == GO_TEXT
    assert notes.verify(note, notes.parse_vkey(GO_VKEY)).name == "PeterNeumann"
    assert str(note) == GO_TEXT + "\n" + GO_LINE


def test_the_specifications_example_verifies() -> None:
    key = notes.parse_vkey(SPEC_VKEY)
    assert (key.name, key.key_id.hex()) == ("example.com/foo", "530d903a")
    assert notes.verify(notes.parse(SPEC_NOTE), key).name == "example.com/foo"
    changed = SPEC_NOTE.replace("example message", "example massage")
    with pytest.raises(notes.NoteError, match="does not hold"):
        notes.verify(notes.parse(changed), key)


def test_the_documented_vectors_are_the_codes() -> None:
    leaves = [tlog.leaf_hash(bytes([i]) * 32) for i in (1, 2, 3)]
    assert [h.hex() for h in leaves] == [DOC["leaf1"], DOC["leaf2"], DOC["leaf3"]]
    assert tlog.node_hash(leaves[0], leaves[1]).hex() == DOC["n12"]
    root = tlog.root(leaves)
    assert root.hex() == DOC["root3"]
    body = notes.Checkpoint(ORIGIN, 3, root).text
    assert body == DOC["body"]
    log = notes.Signer(ORIGIN, LOG_SEED)
    assert log.verifier.vkey == DOC["log_vkey"]
    assert log.sign(body) == DOC["log_line"]
    witness = notes.Signer(WITNESS, WITNESS_SEED, kind=notes.COSIGNATURE_V1)
    assert witness.verifier.vkey == DOC["witness_vkey"]
    assert witness.cosign(body, 1_700_000_000) == DOC["witness_line"]
    note = notes.parse(body + "\n" + DOC["log_line"] + DOC["witness_line"])
    assert notes.verify(note, notes.parse_vkey(DOC["witness_vkey"])).timestamp == 1_700_000_000
    assert notes.parse_checkpoint(note.text) == notes.Checkpoint(ORIGIN, 3, root)
    # The inclusion proof of record 3 and the consistency proof from 2 to 3 in the docs.
    assert tlog.verify_inclusion(leaves[2], 2, 3, [bytes.fromhex(DOC["n12"])], root)
    assert tlog.verify_consistency(
        2, 3, bytes.fromhex(DOC["n12"]), root, [bytes.fromhex(DOC["leaf3"])]
    )
    documented = DOCS.read_text(encoding="utf-8")
    missing = [
        name
        for name, value in DOC.items()
        if value.rstrip("\n").replace("\n", "\\n") not in documented
        and value.rstrip("\n") not in documented
    ]
    assert missing == [], f"docs/proofs.md lacks {missing}"


def test_a_cosignature_signs_what_c2sp_says() -> None:
    """cosignature/v1: key id over 0x04, the signature over two lines and the body."""
    witness = notes.Signer(WITNESS, WITNESS_SEED, kind=notes.COSIGNATURE_V1)
    blob = base64.b64decode(DOC["witness_line"].split(" ")[2])
    public = witness.verifier.public_key
    assert blob[:4] == notes.key_id(WITNESS, 0x04, public)
    assert int.from_bytes(blob[4:12], "big") == 1_700_000_000
    message = b"cosignature/v1\ntime 1700000000\n" + DOC["body"].encode()
    assert notes.cosigned_message(DOC["body"], 1_700_000_000) == message
    as_note_key = notes.Verifier(WITNESS, notes.ED25519, public)  # the same key, type 0x01
    note = notes.parse(DOC["body"] + "\n" + DOC["witness_line"])
    with pytest.raises(notes.NoteError, match="not signed by"):
        notes.verify(note, as_note_key)


@pytest.mark.parametrize(
    ("note", "why"),
    [
        ("no blank line\n— a AAAAAAA=\n", "blank line"),
        ("text\n\n— a AAAAAAA=", "blank line"),
        ("text\n\n- a AAAAAAA=\n", "not a signature line"),
        ("text\n\n— a b AAAAAAA=\n", "not a signature line"),
        ("text\n\n— a+b AAAAAAA=\n", "key name"),
        ("text\n\n— a !!!!\n", "not base64"),
        ("text\n\n— a AAAA\n", "key id and at least"),
        ("te\x07xt\n\n— a AAAAAAA=\n", "control characters"),
    ],
)
def test_malformed_notes_are_refused(note: str, why: str) -> None:
    with pytest.raises(notes.NoteError, match=why):
        notes.parse(note)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("o\n3\n", "three lines"),
        ("o\n3\nAAAA\nextension\n", "three lines"),
        ("o\n03\n" + base64.b64encode(bytes(32)).decode() + "\n", "decimal"),
        ("o\n-1\n" + base64.b64encode(bytes(32)).decode() + "\n", "decimal"),
        ("o\n3\n" + base64.b64encode(bytes(31)).decode() + "\n", "32 bytes"),
        ("\n3\n" + base64.b64encode(bytes(32)).decode() + "\n", "origin"),
    ],
)
def test_malformed_checkpoints_are_refused(text: str, why: str) -> None:
    with pytest.raises(notes.NoteError, match=why):
        notes.parse_checkpoint(text)


def test_a_verifier_key_must_name_its_own_id() -> None:
    with pytest.raises(notes.NoteError, match="key id"):
        notes.parse_vkey(GO_VKEY.replace("c74f20a3", "c74f20a4"))
    with pytest.raises(notes.NoteError, match="name\\+keyid"):
        notes.parse_vkey("PeterNeumann")
    with pytest.raises(notes.NoteError, match="0x01"):
        notes.parse_vkey("x+00000000+" + base64.b64encode(b"\x02" + bytes(32)).decode())


def test_notes_one_after_the_other_are_split() -> None:
    one = GO_TEXT + "\n" + GO_LINE
    two = DOC["body"] + "\n" + DOC["log_line"] + DOC["witness_line"]
    assert notes.split_notes(one + two) == [one, two]
    assert notes.split_notes(one + "\n\n" + two + "\n") == [one, two]
    assert notes.split_notes("") == []
