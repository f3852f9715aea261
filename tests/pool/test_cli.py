from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from pharaon.cli import app

runner = CliRunner()


def _run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def design_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pharaon.pool.design import test_design

    design = test_design(1_000)
    lines = ["[design]", f'name = "{design.name}"', "block_size = 1000", "test = true"]
    for amount in sorted({c.amount_cents for c in design.compositions}, reverse=True):
        lines += ["[[lot]]", f"amount_cents = {amount}", "composition = ["]
        for c in design.compositions:
            if c.amount_cents == amount:
                lines.append(
                    f'  {{ lines = "{c.lines}", bonus = "{c.bonus}", count = {c.count} }},'
                )
        lines.append("]")
    path = tmp_path_factory.mktemp("design") / "small.toml"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


@pytest.fixture(scope="module")
def block_file(design_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "b.parquet"
    code, out, err = _run(
        "generate", "--price", "2", "--out", str(path), "--design", str(design_file),
        "--emission", "E7", "--block", "3", "--vendor-key", "01" * 16, "--operator-key", "02" * 16,
    )  # fmt: skip
    assert code == 0, err
    assert "wrote" in out
    return path


def test_every_command_has_help() -> None:
    for command in ("generate", "verify", "export", "report"):
        code, out, _ = _run(command, "--help")
        assert code == 0
        assert "Usage" in out


def test_generate_then_verify(block_file: Path) -> None:
    code, out, _ = _run("verify", str(block_file))
    assert code == 0
    assert out.startswith("OK: test block E7/3 at 2,00 €, 1,000 units")
    assert len(out.strip().splitlines()) == 1


def test_the_same_keys_give_the_same_file(
    block_file: Path, design_file: Path, tmp_path: Path
) -> None:
    again = tmp_path / "again.parquet"
    code, _, _ = _run(
        "generate", "--price", "2", "--out", str(again), "--design", str(design_file),
        "--emission", "E7", "--block", "3", "--vendor-key", "01" * 16, "--operator-key", "02" * 16,
    )  # fmt: skip
    assert code == 0
    assert again.read_bytes() == block_file.read_bytes()


def test_export_and_report(block_file: Path, tmp_path: Path) -> None:
    code, _, _ = _run("export", str(block_file), "--csv", str(tmp_path / "b.csv"))
    assert code == 0
    assert (tmp_path / "b.csv").read_text("ascii").startswith("serial,ticket,prize_cents\n1,")
    code, _, _ = _run("report", str(block_file), "--out", str(tmp_path / "r"))
    assert code == 0
    assert (tmp_path / "r" / "index.html").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--price", "4"], "--price must be 1, 2 or 3, got 4"),
        (["--price", "1", "--vendor-key", "00" * 16], "both --vendor-key and --operator-key"),
        (["--price", "1", "--vendor-key", "xx", "--operator-key", "00" * 16], "hexadecimal"),
        (["--price", "1", "--vendor-key", "00", "--operator-key", "00" * 16], "16 to 64 bytes"),
        (["--price", "1", "--emission", "a b"], "emission id"),
        (["--price", "1", "--block", "0"], "block number"),
        (["--price", "1", "--design", "/nonexistent.toml"], "cannot read design file"),
    ],
)
def test_generate_bad_input(args: list[str], message: str, tmp_path: Path) -> None:
    code, out, err = _run("generate", "--out", str(tmp_path / "x.parquet"), *args)
    assert code == 2
    assert message in err
    assert "Traceback" not in err + out
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.parquet").exists()


def test_a_design_that_cannot_reach_the_table(design_file: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        design_file.read_text().replace('lines = "JS", bonus = ""', 'lines = "JJ", bonus = ""')
    )
    code, _, err = _run(
        "generate", "--price", "1", "--out", str(tmp_path / "x"), "--design", str(bad)
    )
    assert code == 2
    assert "add up to 200 cents, not 150" in err


def test_verify_a_tampered_file(block_file: Path, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(block_file)
    tickets = table.column("ticket").to_pylist()
    tickets[10] = tickets[11]
    table = table.set_column(1, pa.field("ticket", pa.string()), pa.array(tickets))
    bad = tmp_path / "bad.parquet"
    pq.write_table(table, bad)
    code, out, err = _run("verify", str(bad))
    assert code == 1
    assert "FAILED" in err
    assert "Traceback" not in err + out


@pytest.mark.parametrize("content", [b"", b"garbage", None])
def test_verify_export_report_of_a_bad_file(
    content: bytes | None, block_file: Path, tmp_path: Path
) -> None:
    path = tmp_path / "bad.parquet"
    if content is None:
        path.write_bytes(block_file.read_bytes()[:-100])  # truncated
    else:
        path.write_bytes(content)
    for args in (
        ["verify"],
        ["export", "--csv", str(tmp_path / "o.csv")],
        ["report", "--out", str(tmp_path / "r")],
    ):
        code, out, err = _run(args[0], str(path), *args[1:])
        assert code != 0
        assert "not a readable block file" in err
        assert "Traceback" not in err + out
