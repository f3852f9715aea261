"""An HTML page about a block, with charts: lots against the prize table, the composition mix,
symbol frequencies of the cells outside winning combinations in winning and losing units, and
where the winners fall along the sale order; and two tables an auditor judges the block by: the
near-miss measures of losing against winning units (each within one point) and the order tests
of the winners with their p-values (pharaon.pool.stats). Everything shown is recomputed by the
evaluator."""

from __future__ import annotations

import html
from collections import Counter
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from pharaon.game.batch import evaluate_batch
from pharaon.game.money import format_cents
from pharaon.game.rules import rules
from pharaon.pool.blockfile import Block
from pharaon.pool.stats import (
    CELL_CLASSES,
    LOOK_ALIKE_GAP_PP,
    Fairness,
    fairness,
    free_symbol_counts,
)
from pharaon.pool.verify import composition_keys, verify_block

_BINS = 100


def _save(fig: Any, path: Path) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path.name


def write_report(block: Block, out: Path | str, *, judged: Fairness | None = None) -> Path:
    """Write ``index.html`` and its PNG charts into directory ``out``; returns the page.
    ``judged``: the block's :func:`pharaon.pool.stats.fairness`, computed here if None."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    m = block.manifest
    game = rules()
    result = evaluate_batch(block.units, m.price_cents)
    lots = result.lots_cents
    winning = lots > 0
    check = verify_block(block)
    charts: list[tuple[str, str]] = []

    # 1. Lots against the table.
    table = sorted(m.prize_table, key=lambda t: t.amount_cents)
    found = Counter(lots[winning].tolist())
    fig, ax = plt.subplots(figsize=(8, 4))
    x = np.arange(len(table))
    ax.bar(x - 0.2, [t.lots for t in table], 0.4, label="prize table")
    ax.bar(x + 0.2, [found.get(t.amount_cents, 0) for t in table], 0.4, label="found")
    ax.set_xticks(x, [format_cents(t.amount_cents) for t in table], rotation=30)
    ax.set_yscale("log")
    ax.set_ylabel("units")
    ax.set_title("Lots: prize table and what the evaluator finds")
    ax.legend()
    charts.append(("Lots against the prize table", _save(fig, out / "lots.png")))

    # 2. Composition mix.
    keys = composition_keys(result)
    mix = Counter(
        (int(lot), key)
        for lot, key, w in zip(lots.tolist(), keys, winning.tolist(), strict=True)
        if w
    )
    items = sorted(mix.items(), key=lambda kv: (-kv[0][0], kv[0][1]))
    fig, ax = plt.subplots(figsize=(8, 0.3 * len(items) + 1.5))
    ax.barh(range(len(items)), [c for _, c in items])
    ax.set_yticks(range(len(items)), [f"{format_cents(a)}  {k}" for (a, k), _ in items], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("units")
    ax.set_title("Composition mix (L: winning lines, B: bonus groups)")
    charts.append(("Composition mix", _save(fig, out / "compositions.png")))

    # 3. Symbol frequencies outside winning combinations.
    counts = free_symbol_counts(block.units, winning)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    codes = list(game.symbol_codes)
    x = np.arange(len(codes))
    for k, ax in enumerate(axes):
        for w, label, shift in ((0, "losing units", -0.2), (1, "winning units", 0.2)):
            share = counts[w, k] / max(1, counts[w, k].sum())
            ax.bar(x + shift, share, 0.4, label=label)
        ax.axhline(1 / len(codes), color="grey", linewidth=0.8)
        ax.set_xticks(x, codes)
        ax.set_title(f"cells {'in' if CELL_CLASSES[k] == 'bonus' else 'outside'} the bonus grid")
    axes[0].set_ylabel("share of cells outside winning combinations")
    axes[0].legend()
    charts.append(("Symbol frequencies, winning and losing units", _save(fig, out / "symbols.png")))

    # 4. Winners along the sale order.
    n = block.size
    bins = min(_BINS, n)
    edges = np.linspace(0, n, bins + 1).astype(np.int64)
    rate = np.add.reduceat(winning.astype(np.int64), edges[:-1]) / np.diff(edges)
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(edges[:-1] + 1, rate, drawstyle="steps-post", label="winning share per slice")
    ax.axhline(winning.mean(), color="grey", linewidth=0.8, label="whole block")
    threshold = 2000 * game.multiplier(m.price_cents)
    big = np.flatnonzero(lots >= threshold) + 1
    ax.plot(big, np.full(big.size, rate.min() * 0.98), "|", markersize=12,
            label=f"lots of {format_cents(threshold)} or more")  # fmt: skip
    ax.set_xlabel("serial (order of sale)")
    ax.set_ylabel("share of winning units")
    ax.set_title(f"Winners along the sale order ({bins} slices)")
    ax.legend(fontsize=8)
    charts.append(("Where the winners fall along the sale order", _save(fig, out / "order.png")))

    page = out / "index.html"
    if judged is None:
        judged = fairness(block.units, lots)
    page.write_text(_page(block, check.summary, charts, found, judged), "utf-8")
    return page


def _fairness_tables(judged: Fairness) -> str:
    esc = html.escape
    measures = "".join(
        f"<tr><td>{esc(m.label)}</td><td>{m.losing_pct:.2f} %</td><td>{m.winning_pct:.2f} %</td>"
        f"<td>{m.gap_pp:.2f}</td><td>{'yes' if m.alike else '<b>NO</b>'}</td></tr>"
        for m in judged.measures
    )
    order = "".join(
        f"<tr><td>{esc(t.label)}</td><td>{t.p_value:.4f}</td>"
        f"<td>{'passed' if t.passed else '<b>FAILED</b>'}</td></tr>"
        for t in judged.order
    )
    verdict = "they look alike" if judged.ok else "<b>NOT fair by these measures</b>"
    return f"""<h2 id="look-alike">Near-misses: losing and winning units ({verdict})</h2>
<p>Each measure in percent of losing and of winning units (or of their lines, pairs or cells,
away from winning combinations); they must differ by {LOOK_ALIKE_GAP_PP:g} point at most.</p>
<table><tr><th>measure</th><th>losing</th><th>winning</th><th>gap (points)</th>
<th>within</th></tr>{measures}</table>
<h2 id="order-tests">Winners along the sale order: tests</h2>
<p>Two-sided p-values; a test fails below 0.01 shared among the {len(judged.order)} tests.</p>
<table><tr><th>test</th><th>p-value</th><th></th></tr>{order}</table>
"""


def _page(
    block: Block,
    summary: str,
    charts: list[tuple[str, str]],
    found: Counter[int],
    judged: Fairness,
) -> str:
    m = block.manifest
    esc = html.escape
    rows = "".join(
        f"<tr><td>{esc(format_cents(t.amount_cents))}</td><td>{t.lots:,}</td>"
        f"<td>{found.get(t.amount_cents, 0):,}</td>"
        f"<td>{'yes' if t.cumulation_only else ''}</td></tr>"
        for t in m.prize_table
    )
    facts = [
        ("game", m.game),
        ("price", format_cents(m.price_cents)),
        ("emission / block", f"{m.emission} / {m.block_number}"),
        ("units", f"{m.block_size:,}" + (" (test block)" if m.test else "")),
        ("generator", m.generator_version),
        ("design", f"{m.design_name} ({m.design_digest})"),
        ("units SHA-256", m.units_sha256),
        ("Merkle root", m.merkle_root),
        ("verification", summary),
    ]
    head = "".join(f"<tr><th>{esc(k)}</th><td><code>{esc(v)}</code></td></tr>" for k, v in facts)
    figures = "".join(
        f'<h2>{esc(title)}</h2><img src="{esc(name)}" alt="{esc(title)}">' for title, name in charts
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Block {esc(m.emission)}/{m.block_number}</title>
<style>body{{font-family:sans-serif;max-width:70em;margin:2em auto}}td,th{{padding:.2em .6em;
text-align:left}}img{{max-width:100%}}</style></head><body>
<h1>« {esc(m.game)} » block {esc(m.emission)}/{m.block_number}</h1>
<table>{head}</table>
<h2>Prize table</h2>
<table><tr><th>lot</th><th>table</th><th>found</th><th>only by cumulation</th></tr>{rows}</table>
{_fairness_tables(judged)}
{figures}
</body></html>
"""
