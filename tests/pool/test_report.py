from __future__ import annotations

import html
from pathlib import Path

import pytest

from pharaon.pool.blockfile import Block, read_block
from pharaon.pool.report import write_report
from pharaon.pool.stats import fairness


def test_the_report_page_and_its_charts(small_block: Block, tmp_path: Path) -> None:
    page = write_report(small_block, tmp_path / "report")
    assert page == tmp_path / "report" / "index.html"
    text = page.read_text("utf-8")
    for name in ("lots.png", "compositions.png", "symbols.png", "order.png"):
        assert (tmp_path / "report" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f'src="{name}"' in text
    assert small_block.manifest.merkle_root in text
    assert "OK: test block" in text
    assert "25\u202f000,00 €" in text
    judged = fairness(small_block.units, small_block.lots_cents)
    for m in judged.measures:  # every measure, with its figures
        assert f"<td>{html.escape(m.label)}</td><td>{m.losing_pct:.2f} %</td>" in text
    for t in judged.order:
        assert f"<td>{html.escape(t.label)}</td><td>{t.p_value:.4f}</td>" in text


@pytest.mark.slow
def test_the_report_of_a_regulation_block_shows_every_near_miss_within_one_point(
    real_blocks: dict[int, Path], tmp_path: Path
) -> None:
    block = read_block(real_blocks[200])
    text = write_report(block, tmp_path / "report").read_text("utf-8")
    assert "they look alike" in text
    measures = text.split('id="look-alike"')[1].split('id="order-tests"')[0]
    assert measures.count("<td>yes</td>") == 3 + 4 * 6
    assert "<b>NO</b>" not in measures
