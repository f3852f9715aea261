"""`pharaon generate | verify | export | report`: make, prove and publish blocks."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from pharaon.cli.app import app, fail
from pharaon.cli.progress import ProgressCallback, progress_display
from pharaon.game.rules import BASE_PRICE_CENTS, rules
from pharaon.pool.blockfile import Block, BlockFileError, read_block, write_block
from pharaon.pool.design import DesignError, load_design
from pharaon.pool.keys import SeedKeyError
from pharaon.pool.layout import LayoutError


@app.command("generate")
@click.option(
    "--price",
    type=int,
    required=True,
    help=f"The block's price in euros: {rules().prices_in_euros}.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    required=True,
    help="The block file to write (Parquet).",
)
@click.option("--emission", default="E1", show_default=True, help="The emission id.")
@click.option("--block", default=1, show_default=True, help="The block's number in its emission.")
@click.option(
    "--vendor-key-file",
    type=click.Path(path_type=Path),
    envvar="PHARAON_VENDOR_KEY_FILE",
    show_envvar=True,
    help="The vendor's key file (`pharaon keys new`); with the operator's, or neither "
    "(fresh keys, forgotten).",
)
@click.option(
    "--operator-key-file",
    type=click.Path(path_type=Path),
    envvar="PHARAON_OPERATOR_KEY_FILE",
    show_envvar=True,
    help="The operator's key file.",
)
@click.option(
    "--design",
    type=click.Path(path_type=Path),
    help="A design file (default: the packaged regulation one).",
)
def generate_command(
    *,
    price: int,
    out: Path,
    emission: str,
    block: int,
    vendor_key_file: Path | None,
    operator_key_file: Path | None,
    design: Path | None,
) -> None:
    """Generate a block of units with exactly the prize table, shuffled, with its manifest."""
    from pharaon.pool.generate import generate_block
    from pharaon.pool.keys import read_key_file

    if price * BASE_PRICE_CENTS not in rules().prices_cents:
        fail(f"--price must be {rules().prices_in_euros}, got {price}")
    if (vendor_key_file is None) != (operator_key_file is None):
        fail("give both --vendor-key-file and --operator-key-file, or neither")
    try:
        vendor = read_key_file(vendor_key_file, "vendor") if vendor_key_file else None
        operator = read_key_file(operator_key_file, "operator") if operator_key_file else None
        plan = load_design(design) if design is not None else None
    except (SeedKeyError, DesignError) as exc:
        fail(str(exc))
    if out.is_dir():
        fail(f"--out {out} is a directory")
    if not out.parent.exists():
        fail(f"--out: directory {out.parent} does not exist")
    try:
        with progress_display() as progress:
            made = generate_block(
                price * BASE_PRICE_CENTS,
                emission=emission,
                block_number=block,
                vendor_key=vendor,
                operator_key=operator,
                design=plan,
                progress=progress,
            )
            progress("write", 0, 1)
            write_block(made, out)
            progress("write", 1, 1)
    except (LayoutError, SeedKeyError) as exc:
        fail(str(exc))
    except ValueError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write {out}: {exc.strerror}")
    m = made.manifest
    click.echo(
        f"wrote {out}: {m.block_size:,} units at {price} €, emission {m.emission} block "
        f"{m.block_number}, merkle root {m.merkle_root}"
    )


@app.command("verify")
@click.argument("file", type=click.Path(path_type=Path), help="The block file to check.")
def verify_command(file: Path) -> None:
    """Re-evaluate every unit and check the prize table, counts, hashes and Merkle root."""
    from pharaon.pool.verify import verify_block

    with progress_display() as progress:
        report = verify_block(file, progress=progress)
    if not report.ok:
        for problem in report.problems:
            sys.stderr.write(f"pharaon: problem: {problem}\n")
        fail(report.summary, code=1)
    click.echo(report.summary)


def _read(file: Path, progress: ProgressCallback) -> Block:
    """Read a block file, shown as one step of the progress bars."""
    progress("read", 0, 1)
    block_ = read_block(file)
    progress("read", 1, 1)
    return block_


@app.command("export")
@click.argument("file", type=click.Path(path_type=Path), help="The block file.")
@click.option(
    "--csv",
    type=click.Path(path_type=Path),
    required=True,
    help="The CSV file to write (docs/rules.md §5).",
)
def export_command(file: Path, csv: Path) -> None:
    """Write the block as CSV: serial,ticket,prize_cents in the order of sale."""
    from pharaon.pool.export import export_csv

    try:
        with progress_display() as progress:
            block_ = _read(file, progress)
            export_csv(block_, csv, progress=progress)
    except BlockFileError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write {csv}: {exc.strerror}")
    click.echo(f"wrote {csv}: {block_.size:,} rows")


@app.command("report")
@click.argument("file", type=click.Path(path_type=Path), help="The block file.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    required=True,
    help="The directory to write index.html and charts to.",
)
def report_command(file: Path, out: Path) -> None:
    """Write an HTML page with charts (lots against the table, compositions, symbols, order)
    and the near-miss measures and order tests an auditor judges the block by."""
    from pharaon.pool.report import write_report
    from pharaon.pool.stats import fairness

    try:
        with progress_display() as progress:
            block_ = _read(file, progress)
            progress("report", 0, 1)
            judged = fairness(block_.units, block_.lots_cents)
            page = write_report(block_, out, judged=judged)
            progress("report", 1, 1)
    except BlockFileError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write the report to {out}: {exc.strerror}")
    click.echo(f"wrote {page}")
    gap = max(m.gap_pp for m in judged.measures)
    apart = [m.name for m in judged.measures if not m.alike]
    failed = [t.name for t in judged.order if not t.passed]
    click.echo(
        f"near-misses: {'alike' if not apart else 'APART: ' + ', '.join(apart)} "
        f"(largest gap {gap:.2f} points); order tests: "
        f"{'passed' if not failed else 'FAILED: ' + ', '.join(failed)}"
    )
