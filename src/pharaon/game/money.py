"""Amounts are integer euro cents; this formats them the French way for people."""

from __future__ import annotations


def format_cents(cents: int) -> str:
    """``150`` → ``'1,50 €'``; thousands grouped by a narrow no-break space: ``'25 000,00 €'``."""
    sign = "-" if cents < 0 else ""
    euros, rest = divmod(abs(cents), 100)
    grouped = f"{euros:,}".replace(",", "\u202f")
    return f"{sign}{grouped},{rest:02d} €"
