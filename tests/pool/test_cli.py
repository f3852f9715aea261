from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from pharaon.cli import app
from pharaon.pool.blockfile import read_block
from pharaon.pool.keys import commitment, read_key_file

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
def key_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A vendor and an operator key file made by `pharaon keys new`."""
    folder = tmp_path_factory.mktemp("keys")
    files = {who: folder / f"{who}.key" for who in ("vendor", "operator")}
    for path in files.values():
        code, out, err = _run("keys", "new", "--out", str(path))
        assert code == 0, err
        assert out.startswith(f"wrote {path} (mode 0600); commitment ")
    return files


def _key_args(files: dict[str, Path]) -> list[str]:
    return [
        "--vendor-key-file",
        str(files["vendor"]),
        "--operator-key-file",
        str(files["operator"]),
    ]


@pytest.fixture(scope="module")
def block_file(
    design_file: Path, key_files: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    path = tmp_path_factory.mktemp("cli") / "b.parquet"
    code, out, err = _run(
        "generate", "--price", "2", "--out", str(path), "--design", str(design_file),
        "--emission", "E7", "--block", "3", *_key_args(key_files),
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
    code, out, err = _run("verify", str(block_file))
    assert code == 0
    assert out.startswith("OK: test block E7/3 at 2,00 €, 1,000 units")
    assert len(out.strip().splitlines()) == 1
    # stderr is no terminal here: one plain line per stage, no bars.
    stages = err.strip().splitlines()
    assert stages, err
    assert all(re.fullmatch(r"[\w ,.-]+: done in \d+\.\d\d s", s) for s in stages), err


def test_the_same_keys_give_the_same_file(
    block_file: Path, design_file: Path, key_files: dict[str, Path], tmp_path: Path
) -> None:
    again = tmp_path / "again.parquet"
    code, _, _ = _run(
        "generate", "--price", "2", "--out", str(again), "--design", str(design_file),
        "--emission", "E7", "--block", "3", *_key_args(key_files),
    )  # fmt: skip
    assert code == 0
    assert again.read_bytes() == block_file.read_bytes()


def test_the_manifest_commits_to_both_keys_and_holds_neither(
    block_file: Path, key_files: dict[str, Path]
) -> None:
    manifest = read_block(block_file).manifest
    data = block_file.read_bytes()
    for who, path in key_files.items():
        key = read_key_file(path, who)
        assert getattr(manifest, f"{who}_key_commitment") == commitment(key)
        assert key not in data
        assert key.hex().encode() not in data


def test_the_key_files_can_come_from_the_environment(
    design_file: Path, key_files: dict[str, Path], block_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "env.parquet"
    env = {
        "PHARAON_VENDOR_KEY_FILE": str(key_files["vendor"]),
        "PHARAON_OPERATOR_KEY_FILE": str(key_files["operator"]),
    }
    result = runner.invoke(
        app,
        ["generate", "--price", "2", "--out", str(out), "--design", str(design_file),
         "--emission", "E7", "--block", "3"],
        env=env,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert out.read_bytes() == block_file.read_bytes()


def test_no_key_in_the_process_list_while_generating(
    key_files: dict[str, Path], tmp_path: Path
) -> None:
    """`ps` shows every process's arguments to every user of the machine."""
    keys = [read_key_file(path, who) for who, path in key_files.items()]
    out = tmp_path / "watched.parquet"
    command = [sys.executable, "-m", "pharaon", "generate", "--price", "1", "--out", str(out)]
    process = subprocess.Popen([*command, *_key_args(key_files)], stderr=subprocess.DEVNULL)
    seen: list[str] = []
    try:
        while process.poll() is None:
            listing = subprocess.run(
                ["ps", "-eww", "-o", "args"], capture_output=True, text=True, check=True
            ).stdout
            if "--vendor-key-file" in listing:
                seen.append(listing)
            time.sleep(0.05)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
    assert process.returncode == 0
    assert seen  # the generator was watched while it ran
    for listing in seen:
        for key in keys:
            assert key.hex() not in listing.lower()
    for key in keys:
        assert key not in out.read_bytes()


def test_keys_on_the_command_line_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "x.parquet"
    code, _, err = _run("generate", "--price", "1", "--out", str(out), "--vendor-key", "00" * 16)
    assert code == 2
    assert "No such option '--vendor-key'" in err
    assert not out.exists()


def test_a_weak_key_file_is_refused_in_one_line(key_files: dict[str, Path], tmp_path: Path) -> None:
    weak = tmp_path / "zero.key"
    weak.write_text("00" * 32 + "\n")
    weak.chmod(0o600)
    out = tmp_path / "x.parquet"
    args = ["--vendor-key-file", str(weak), "--operator-key-file", str(key_files["operator"])]
    code, stdout, err = _run("generate", "--price", "1", "--out", str(out), *args)
    assert code == 2
    assert "the vendor key is weak (1 distinct byte values" in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err + stdout
    assert not out.exists()


def test_keys_new_never_overwrites(key_files: dict[str, Path]) -> None:
    before = key_files["vendor"].read_bytes()
    code, _, err = _run("keys", "new", "--out", str(key_files["vendor"]))
    assert code == 2
    assert "exists already: a key file is never overwritten" in err
    assert key_files["vendor"].read_bytes() == before


def test_export_and_report(block_file: Path, tmp_path: Path) -> None:
    code, _, _ = _run("export", str(block_file), "--csv", str(tmp_path / "b.csv"))
    assert code == 0
    assert (tmp_path / "b.csv").read_text("ascii").startswith("serial,ticket,prize_cents\n1,")
    code, out, _ = _run("report", str(block_file), "--out", str(tmp_path / "r"))
    assert code == 0
    assert (tmp_path / "r" / "index.html").exists()
    assert re.search(
        r"^near-misses: (alike|APART: [a-z_0-9, A-Z]+) \(largest gap \d+\.\d\d points\); "
        r"order tests: (passed|FAILED: .+)$",
        out,
        re.MULTILINE,
    ), out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--price", "4"], "--price must be 1, 2 or 3, got 4"),
        (["--price", "1", "--vendor-key-file", "k"], "both --vendor-key-file and --operator"),
        (
            ["--price", "1", "--vendor-key-file", "/nowhere", "--operator-key-file", "/nowhere"],
            "the vendor key file /nowhere does not exist",
        ),
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
