"""issue 52's done-when: the estimator layer stays small modules with one job each."""

from pathlib import Path

import fedstruct.estimators

#: The most lines a module of fedstruct/estimators/ may have.
MAX_LINES = 400


def test_no_estimator_module_is_over_400_lines():
    folder = Path(fedstruct.estimators.__file__).parent
    sizes = {p.name: len(p.read_text().splitlines()) for p in folder.glob("*.py")}
    assert "base.py" in sizes
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}
