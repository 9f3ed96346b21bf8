"""fedstruct.files: regular files of bounded size, YAML/JSON as bounded plain data."""

from __future__ import annotations

import os

import pytest

from fedstruct.errors import ConfigError, KnowledgeError
from fedstruct.files import MAX_DEPTH, parse_json, parse_yaml, parse_yaml_scalar, read_text


def test_yaml_numbers_follow_yaml_1_2() -> None:
    data = parse_yaml("a: 1e-5\nb: 1e30\nc: 1.0e6\nd: 3\ne: .5\nf: 1.5e+3\ng: abc", "f")
    assert data == {"a": 1e-5, "b": 1e30, "c": 1e6, "d": 3, "e": 0.5, "f": 1500.0, "g": "abc"}
    assert isinstance(data["d"], int)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("a: &x [1, 2]\nb: *x", "aliases"),
        ("a: 1\na: 2", "key 'a' is given twice"),
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nesting deeper"),
        ("a: [", "not valid YAML"),
    ],
)
def test_yaml_refusals_are_one_line(text: str, says: str) -> None:
    with pytest.raises(KnowledgeError, match=says) as info:
        parse_yaml(text, "knowledge file k.yaml", error=KnowledgeError)
    assert "\n" not in str(info.value)


def test_yaml_bomb_is_refused_before_it_expands() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{k}: &a{k} [*a{k - 1}, *a{k - 1}, *a{k - 1}]" for k in range(1, 30)]
    with pytest.raises(ConfigError, match="aliases"):
        parse_yaml("\n".join(lines), "settings")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"a": 1, "a": 2}', "key 'a' is given twice"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nesting deeper"),
        ("{", "not valid JSON"),
    ],
)
def test_json_refusals_are_one_line(text: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        parse_json(text, "run.json")


def test_scalars_of_set() -> None:
    assert parse_yaml_scalar("1e-5") == 1e-5
    assert parse_yaml_scalar("true") is True
    assert parse_yaml_scalar("[1,") == "[1,"
    assert parse_yaml_scalar("") == ""


def test_only_regular_files_of_bounded_size_are_read(tmp_path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="named pipe"):
        read_text(fifo, "knowledge file")  # would block for ever if opened blocking
    with pytest.raises(ConfigError, match="is a device"):
        read_text("/dev/zero", "knowledge file")
    link = tmp_path / "zero.yaml"
    link.symlink_to("/dev/zero")
    with pytest.raises(ConfigError, match="is a device"):
        read_text(link, "knowledge file")
    with pytest.raises(ConfigError, match="is a folder"):
        read_text(tmp_path, "knowledge file")
    with pytest.raises(ConfigError, match="does not exist"):
        read_text(tmp_path / "none.yaml", "knowledge file")
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a" * 101)
    with pytest.raises(ConfigError, match="larger than 100 bytes"):
        read_text(big, "knowledge file", limit=100)
    assert read_text(big, "knowledge file", limit=101) == "a" * 101
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("smöke".encode("latin-1"))
    with pytest.raises(ConfigError, match="not UTF-8"):
        read_text(latin, "knowledge file")


def test_file_digest_reads_any_size_but_only_a_regular_file(tmp_path) -> None:
    import hashlib

    from fedstruct.files import TEXT_LIMIT, file_digest

    big = tmp_path / "site.csv"
    data = os.urandom(1024) * (TEXT_LIMIT // 1024 + 3)  # above the text limit: no matter
    big.write_bytes(data)
    assert file_digest(big, "site file") == hashlib.sha256(data).hexdigest()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match=r"site file .*pipe is a named pipe"):
        file_digest(fifo, "site file")  # would block for ever if opened blocking
    with pytest.raises(ConfigError, match="is a folder"):
        file_digest(tmp_path, "site file")
