"""What the audit found, as codes and figures: each of :func:`pharaon.service.audit.run_audit`'s
checks is a :class:`Check` (its code, whether it passed, its :class:`Finding` s), said in
English here for ``pharaon audit`` and the logs, and in the console's words (its dictionary has
``check_<code>`` and ``finding_<code>`` in French and English, the same figures in braces:
``tests/web/test_console_words.py`` holds the two to the same codes).

A figure is a number, a time (``at``, ISO 8601) or a word of :data:`WORDS` (``who``, ``period``,
``span``), which the console says in its own words too (``<figure>_<word>``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

# The checks, in the order run_audit runs them.
CHECKS: Final[Mapping[str, str]] = {
    "ledger_balances": "ledger balances",
    "balances_equal_ledgers": "balances equal ledgers",
    "pending_lots": "pending lots equal unfinished plays' lots",
    "withdrawals_held": "withdrawals held and paid out equal their withdrawals",
    "withdrawal_moves": "each withdrawal's ledger moves its amount",
    "one_play_per_unit": "one play per sold unit",
    "play_lots": "play lots equal unit lots",
    "block_sizes": "sold + unsold = block size",
    "audit_chain": "audit chain intact",
    "transparency_log": "transparency log consistent",
    "limits_kept": "limits kept",
}

ENGLISH: Final[Mapping[str, str]] = {
    "all_equal": "all equal",
    "all_match": "all match",
    "ledger_sums": "entries sum to {total}, {unbalanced} unbalanced and {empty} empty transactions",
    "account_differs": "account {account}: balance {balance}, ledger {ledger}",
    "pending_held": "pending account {held}, lots of jouer plays not fully uncovered {waiting}",
    "withdrawals_sums": (
        "withdrawals account {held}, requested {requested}; paid-out account {paid_out}, "
        "paid {paid}; rejected {rejected}"
    ),
    "withdrawals_differ": "withdrawals {ids} do not match their ledger transactions",
    "withdrawal_strays": "{count} withdrawal transactions belong to no withdrawal",
    "block_plays": (
        "block {block}: {sold} units sold, {plays} plays, {beyond} plays of unsold units"
    ),
    "plays_orphaned": "{count} plays without their unit",
    "play_lot_differs": "play {play}: lot {lot}, unit {unit}",
    "blocks_complete": "{count} blocks complete",
    "runs_cover": "block {block}: its runs cover {covered} of {size} units",
    "sold_unsold": "block {block}: {sold} sold + {unsold} unsold != {size}",
    "chain_whole": "{records} records, through {checkpoints} checkpoints",
    "record_missing": "record {seq} is missing",
    "record_hash": "record {seq} does not match its hash",
    "record_rewritten": (
        "record {seq} is not the published checkpoint at that sequence: the chain was rewritten"
    ),
    "head_count": "head says {head} records, the log has {records}",
    "checkpoint_beyond": "a checkpoint at record {seq} is beyond the chain's {records} records",
    "tree_unreadable": "the stored tree cannot be read: {reason}",
    "claim_beyond": "{who} of {size} records is beyond the log's records",
    "claim_root": "{who} of {size} records has root {root}, the log gives {found}: the log "
    "was rewritten",
    "tree_agrees": "the stored tree, {stored} stored and {signed} signed checkpoints agree with "
    "the log",
    "tree_unchecked": "{count} checkpoints past the chain's break not checked",
    "limits_held": (
        "{purchases} purchases and {deposits} deposits of {players} players within the limits "
        "in force at their time"
    ),
    "records_unread": (
        "{count} records unreadable, their players' later ones not checked: left to the "
        "chain's check"
    ),
    "stake_unmoderated": (
        "player {player} at record {seq} ({at}): a stake of {stake} cents before the "
        "moderators were set"
    ),
    "stake_limit": (
        "player {player} at record {seq} ({at}): {period} limit {limit} cents passed: {staked} "
        "cents staked in the {span} before, then {stake} more"
    ),
    "loss_limit": (
        "player {player} at record {seq} ({at}): weekly loss limit {limit} cents passed: a net "
        "loss of {loss} cents in the 7 days before, then a stake of {stake}"
    ),
    "deposit_unmoderated": (
        "player {player} at record {seq} ({at}): a deposit of {amount} cents before the "
        "moderators were set"
    ),
    "deposit_limit": (
        "player {player} at record {seq} ({at}): {period} deposit limit {limit} cents passed: "
        "{deposited} cents deposited in the {span} before, then {amount} more"
    ),
    "more_faults": "and {count} more",
}

# The figures that are words, and their English.
WORDS: Final[Mapping[str, Mapping[str, str]]] = {
    "who": {
        "stored_checkpoint": "the stored checkpoint",
        "stored_tree": "the stored tree",
        "signed_checkpoint": "the signed checkpoint",
    },
    "period": {
        "daily": "daily",
        "weekly": "weekly",
        "monthly": "monthly",
        "stake_daily": "stake_daily",
        "stake_weekly": "stake_weekly",
        "stake_monthly": "stake_monthly",
    },
    "span": {"24h": "24 hours", "7d": "7 days", "30d": "30 days"},
}


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing a check found: its code (a key of :data:`ENGLISH`) and its figures."""

    code: str
    figures: Mapping[str, int | str]

    def __str__(self) -> str:
        words = {
            name: WORDS[name][str(value)] if name in WORDS else value
            for name, value in self.figures.items()
        }
        return ENGLISH[self.code].format(**words)


def found(code: str, **figures: int | str) -> Finding:
    return Finding(code, figures)


@dataclass(frozen=True, slots=True)
class Check:
    """One check of the audit: its code (a key of :data:`CHECKS`), whether it passed, and
    what it found."""

    code: str
    passed: bool
    found: tuple[Finding, ...]

    @property
    def name(self) -> str:
        return CHECKS[self.code]

    @property
    def detail(self) -> str:
        return "; ".join(map(str, self.found))
