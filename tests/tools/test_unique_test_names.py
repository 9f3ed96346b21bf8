"""The test tree has no ``__init__.py`` files, so pytest imports each test file as a
top-level module named after its file: two files of one name in different folders
collide ("import file mismatch"). Every test file's name is therefore unique."""

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_file_has_a_name_of_its_own():
    names = Counter(path.name for path in TESTS.rglob("test_*.py"))
    assert sorted(name for name, count in names.items() if count > 1) == []
    assert names["test_unique_test_names.py"] == 1
