"""tools/mypy_ratchet.py on fabricated mypy output: a file's count may only fall."""

from __future__ import annotations

from collections import Counter

import pytest
from mypy_ratchet import BASELINE, compare, count, main, read_baseline, write_baseline

OUTPUT = """\
src/fedstruct/a.py:3: error: Incompatible types in assignment  [assignment]
src/fedstruct/a.py:9:5: error: Item "None" has no attribute "x"  [union-attr]
src/fedstruct/a.py:9: note: See https://mypy.readthedocs.io
src/fedstruct/b.py:1: error: Name "y" is not defined  [name-defined]
Found 3 errors in 2 files (checked 3 source files)
"""


def ratchet(tmp_path, output: str, baseline: str) -> int:
    (tmp_path / "mypy.txt").write_text(output)
    (tmp_path / "baseline.txt").write_text(baseline)
    return main(
        ["--output", str(tmp_path / "mypy.txt"), "--baseline", str(tmp_path / "baseline.txt")]
    )


def test_errors_are_counted_per_file_and_notes_are_not():
    assert count(OUTPUT) == Counter({"src/fedstruct/a.py": 2, "src/fedstruct/b.py": 1})


def test_counts_equal_to_the_baseline_pass(tmp_path, capsys):
    assert ratchet(tmp_path, OUTPUT, "2 src/fedstruct/a.py\n1 src/fedstruct/b.py\n") == 0
    assert "3 errors in 2 files, none above the baseline" in capsys.readouterr().out


def test_a_count_above_the_baseline_fails_and_prints_that_file_s_errors(tmp_path, capsys):
    assert ratchet(tmp_path, OUTPUT, "1 src/fedstruct/a.py\n1 src/fedstruct/b.py\n") == 1
    out = capsys.readouterr().out
    assert "src/fedstruct/a.py: 2 mypy errors, the baseline allows 1" in out
    assert "  src/fedstruct/a.py:9:5: error: Item" in out
    assert "src/fedstruct/b.py:1" not in out
    assert "1 file(s) have more errors than" in out


def test_a_file_the_baseline_does_not_name_may_have_no_error(tmp_path, capsys):
    assert ratchet(tmp_path, OUTPUT, "# only a.py\n2 src/fedstruct/a.py\n") == 1
    assert "src/fedstruct/b.py: 1 mypy errors, the baseline allows 0" in capsys.readouterr().out


def test_fixing_one_file_does_not_pay_for_breaking_another(tmp_path, capsys):
    """The total is the baseline's (3), but b.py rose: it fails, and says what to do
    when the errors moved with the code (a module moved or split)."""
    assert ratchet(tmp_path, OUTPUT, "3 src/fedstruct/a.py\n") == 1
    assert "moved with code from the files that fell" in capsys.readouterr().out
    assert ratchet(tmp_path, OUTPUT, "2 src/fedstruct/a.py\n") == 1
    assert "moved with code" not in capsys.readouterr().out


def test_counts_below_the_baseline_pass_and_say_how_to_lower_it(tmp_path, capsys):
    baseline = "5 src/fedstruct/a.py\n1 src/fedstruct/b.py\n2 src/fedstruct/gone.py\n"
    assert ratchet(tmp_path, OUTPUT, baseline) == 0
    out = capsys.readouterr().out
    assert "src/fedstruct/a.py 5 -> 2, src/fedstruct/gone.py 2 -> 0" in out
    assert "Lower it: python tools/mypy_ratchet.py --write, and commit" in out
    assert (tmp_path / "baseline.txt").read_text() == baseline  # never written unasked


def test_write_records_the_counts_the_comparison_then_reads(tmp_path):
    path = tmp_path / "baseline.txt"
    write_baseline(path, count(OUTPUT))
    assert read_baseline(path) == count(OUTPUT)
    assert compare(count(OUTPUT), read_baseline(path)).rose == []


def test_a_malformed_baseline_line_is_named(tmp_path):
    path = tmp_path / "baseline.txt"
    path.write_text("2 src/fedstruct/a.py\nsrc/fedstruct/b.py 1\n")
    with pytest.raises(ValueError, match=r"baseline.txt:2: expected 'count path'"):
        read_baseline(path)


def test_the_recorded_baseline_names_files_that_exist():
    root = BASELINE.parent.parent
    counts = read_baseline(BASELINE)
    assert counts and all((root / name).is_file() for name in counts)


@pytest.mark.parametrize(
    "code, stdout, stderr",
    [
        (1, "", "/usr/bin/python3: No module named mypy\n"),  # exit 1, as for errors found
        (2, "", "pyproject.toml: [mypy]: invalid option\n"),
    ],
)
def test_a_mypy_that_did_not_check_fails_the_gate(
    monkeypatch, tmp_path, capsys, code, stdout, stderr
):
    """Without mypy's summary line nothing was checked: 0 errors must not pass."""
    import subprocess

    import mypy_ratchet

    baseline = tmp_path / "baseline.txt"
    write_baseline(baseline, Counter())
    monkeypatch.setattr(
        mypy_ratchet.subprocess,
        "run",
        lambda *a, **k: subprocess.CompletedProcess(a, code, stdout, stderr),
    )
    assert main(["--baseline", str(baseline)]) == 1
    assert "mypy failed" in capsys.readouterr().out
