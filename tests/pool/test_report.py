from __future__ import annotations

from pathlib import Path

from pharaon.pool.blockfile import Block
from pharaon.pool.report import write_report


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
