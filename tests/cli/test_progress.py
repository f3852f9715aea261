from __future__ import annotations

import sys

import pytest

from pharaon.cli.progress import prefixed, progress_display


def test_without_a_terminal_each_stage_gets_one_line_when_done(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with progress_display() as progress:
        progress("layout", 0, 4)
        progress("layout", 2, 4)
        assert capsys.readouterr().err == ""
        progress("layout", 4, 4)
        progress("layout", 4, 4)  # told twice: said once
        prefixed(progress, "2,00 € ")("write", 1, 1)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(": done in ")[0] for line in lines] == ["layout", "2,00 € write"]
    assert all(line.endswith(" s") for line in lines)


def test_on_a_terminal_the_stages_are_rich_bars(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    with progress_display() as progress:
        progress("layout", 1, 2)
        progress("layout", 2, 2)
    err = capsys.readouterr().err
    assert "layout" in err
    assert "100.0 %" in err  # rich's percentage column, not a plain "done in" line
    assert "done in" not in err
