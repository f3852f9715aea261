"""The console's dictionary (web/static/operator/js/i18n.js) says, in French and in English,
every check of the audit and everything it can find (service/findings.py), with the same
figures, and every kind of audit record: the console shows none of them as the server's English
or as a code. Chromium reads the screens: tests/browser/test_console_french.py."""

from __future__ import annotations

import re
import string
from importlib import resources
from pathlib import Path

import pytest

from pharaon.service import findings, traces
from pharaon.service.findings import Finding

STATIC = Path(str(resources.files("pharaon.web") / "static" / "operator" / "js"))
_ONE_LINE = re.compile(r'^ {4}(\w+):\s*"((?:[^"\\]|\\.)*)",?$', re.M)
_TWO_LINES = re.compile(r'^ {4}(\w+):\s*\n\s*"((?:[^"\\]|\\.)*)",?$', re.M)


def placeholders(text: str) -> set[str]:
    """The figures a text names in braces."""
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def dictionary() -> dict[str, dict[str, str]]:
    """The console's texts by language, as i18n.js writes them (``key: "text"``, the text on
    the key's line or the next)."""
    source = (STATIC / "i18n.js").read_text()
    body = source[source.index("const TEXT = {") : source.index("\n};\n")]
    parts = {"fr": body[body.index("\n  fr: {") : body.index("\n  en: {")]}
    parts["en"] = body[body.index("\n  en: {") :]
    out = {}
    for lang, part in parts.items():
        texts = dict(_ONE_LINE.findall(part)) | dict(_TWO_LINES.findall(part))
        keys = re.findall(r"^ {4}(\w+):", part, re.M)
        assert sorted(texts) == sorted(keys), "a text the reader above does not read"
        out[lang] = texts
    return out


@pytest.fixture(scope="module")
def texts() -> dict[str, dict[str, str]]:
    return dictionary()


def test_both_languages_say_the_same_things(texts: dict[str, dict[str, str]]) -> None:
    assert set(texts["fr"]) == set(texts["en"])
    differ = {k for k, v in texts["fr"].items() if placeholders(v) != placeholders(texts["en"][k])}
    assert differ == set()


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_every_check_and_finding_is_said_with_its_figures(
    texts: dict[str, dict[str, str]], lang: str
) -> None:
    said = texts[lang]
    assert {f"check_{code}" for code in findings.CHECKS} <= set(said)
    for code, english in findings.ENGLISH.items():
        assert placeholders(said[f"finding_{code}"]) == placeholders(english), code
    for figure, words in findings.WORDS.items():
        assert {f"{figure}_{word}" for word in words} <= set(said), figure


def test_a_finding_is_said_in_english_with_its_words() -> None:
    finding = Finding(
        "stake_limit",
        {
            "player": 7,
            "seq": 12,
            "at": "2026-12-08T10:00:00+00:00",
            "period": "stake_daily",
            "limit": 200,
            "staked": 200,
            "span": "24h",
            "stake": 100,
        },
    )
    assert str(finding) == (
        "player 7 at record 12 (2026-12-08T10:00:00+00:00): stake_daily limit 200 cents "
        "passed: 200 cents staked in the 24 hours before, then 100 more"
    )
    tree = Finding("claim_beyond", {"who": "signed_checkpoint", "size": 21})
    assert str(tree) == "the signed checkpoint of 21 records is beyond the log's records"


def test_every_kind_of_record_is_said(texts: dict[str, dict[str, str]]) -> None:
    """The player's events that the traces export, and every kind the audit screen offers in
    its filter (audit.js), have their words in both languages."""
    audit_js = (STATIC / "audit.js").read_text()
    listed = audit_js[audit_js.index("const KINDS = [") :]
    offered = re.findall(r'^  "(\w+)",$', listed[: listed.index("];")], re.M)
    assert set(traces.EVENTS) <= set(offered)
    for lang in ("fr", "en"):
        assert {f"kind_{kind}" for kind in offered} <= set(texts[lang]), lang
