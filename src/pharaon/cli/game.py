"""`pharaon evaluate`: what a ticket wins."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from pharaon.cli.app import app, fail
from pharaon.game.evaluate import Evaluation, MalformedUnitError, evaluate
from pharaon.game.money import format_cents
from pharaon.game.rules import BASE_PRICE_CENTS, rules
from pharaon.game.unit import TicketError, parse_ticket


def _describe(result: Evaluation) -> list[str]:
    lines = []
    for c in result.combinations:
        where = f"grid {c.grid} {c.label}" if c.kind == "line" else f"bonus grid, {c.label} shape"
        cells = " ".join(f"{g}.{r}.{col}" for g, r, col in c.cells)
        name = rules().symbol(c.symbol).name
        lines.append(
            f"{c.kind:5}  {c.symbol} {name:9} {where:24} {cells:32} "
            f"{format_cents(c.gain_cents):>14}"
        )
    lines.append(f"lot: {format_cents(result.prize_cents)}")
    return lines


@app.command("evaluate")
def evaluate_command(
    ticket: Annotated[str, typer.Argument(help="The ticket string (docs/rules.md §5).")],
    stake: Annotated[int, typer.Option(help=f"The stake in euros: {rules().prices_in_euros}.")] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Print a unit's winning combinations and its lot."""
    stake_cents = stake * BASE_PRICE_CENTS
    if stake_cents not in rules().prices_cents:
        fail(f"--stake must be {rules().prices_in_euros}, got {stake}")
    try:
        result = evaluate(parse_ticket(ticket.strip()), stake_cents)
    except (TicketError, MalformedUnitError) as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps(result.as_json()))
    else:
        typer.echo("\n".join(_describe(result)))
