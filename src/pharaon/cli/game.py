"""`pharaon evaluate`: what a ticket wins."""

from __future__ import annotations

import json

import click

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
@click.argument("ticket", help="The ticket string (docs/rules.md §5).")
@click.option(
    "--stake",
    default=rules().prices_cents[0] // BASE_PRICE_CENTS,
    show_default=True,
    help=f"The stake in euros: {rules().prices_in_euros}.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def evaluate_command(ticket: str, stake: int, as_json: bool) -> None:
    """Print a unit's winning combinations and its lot."""
    stake_cents = stake * BASE_PRICE_CENTS
    if stake_cents not in rules().prices_cents:
        fail(f"--stake must be {rules().prices_in_euros}, got {stake}")
    try:
        result = evaluate(parse_ticket(ticket.strip()), stake_cents)
    except (TicketError, MalformedUnitError) as exc:
        fail(str(exc))
    if as_json:
        click.echo(json.dumps(result.as_json()))
    else:
        click.echo("\n".join(_describe(result)))
