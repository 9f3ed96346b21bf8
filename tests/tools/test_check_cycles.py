"""tools/check_cycles.py: import cycles at import time, on the real tree and on small
trees with one cycle each."""

from __future__ import annotations

import check_cycles
from check_cycles import check


def test_the_repository_has_no_import_cycle(repo):
    assert check(repo / "src") == []


def test_a_module_level_cycle_is_reported_with_each_import_s_line(make_tree):
    src = make_tree(
        {
            "graphs/a.py": "import numpy\nfrom fedstruct.graphs.b import B\nA = 1\n",
            "graphs/b.py": "B = 1\nif True:\n    from fedstruct.graphs import a\n",
        },
    )
    base = f"{src}/fedstruct/graphs"
    assert check(src) == [
        f"cycle: fedstruct.graphs.a ({base}/a.py:2) -> fedstruct.graphs.b ({base}/b.py:3) "
        "-> fedstruct.graphs.a"
    ]


def test_deferred_and_type_checking_imports_back_are_not_cycles(make_tree):
    src = make_tree(
        {
            "graphs/a.py": "from fedstruct.graphs.b import B\n",
            "graphs/b.py": """\
                from typing import TYPE_CHECKING

                if TYPE_CHECKING:
                    from fedstruct.graphs.a import A


                def late():
                    from fedstruct.graphs import a
                """,
        },
    )
    assert check(src) == []


def test_a_cycle_through_a_package_s_init_is_reported(make_tree):
    """Importing ``fedstruct.fl.grid`` first runs ``fedstruct/fl/__init__.py``."""
    src = make_tree(
        {
            "data/client.py": "from fedstruct.fl.grid import Grid\n",
            "fl/__init__.py": "from fedstruct.data.client import ClientData\n",
            "fl/grid.py": "",
        },
    )
    assert check(src) == [
        f"cycle: fedstruct.data.client ({src}/fedstruct/data/client.py:1) -> fedstruct.fl "
        f"({src}/fedstruct/fl/__init__.py:1) -> fedstruct.data.client"
    ]


def test_a_package_importing_its_own_modules_is_no_cycle_by_itself(make_tree):
    """``fedstruct/data/__init__.py`` importing ``fedstruct.data.client`` is no edge back
    to ``fedstruct.data``: the cycle named is the one through ``graphs.io``."""
    src = make_tree(
        {
            "data/__init__.py": "from fedstruct.data.client import ClientData\n",
            "data/client.py": "from fedstruct.graphs.io import read\n",
            "graphs/io.py": "from fedstruct.data import client\n",
        }
    )
    root = f"{src}/fedstruct"
    assert check(src) == [
        f"cycle: fedstruct.data ({root}/data/__init__.py:1) -> fedstruct.data.client "
        f"({root}/data/client.py:1) -> fedstruct.graphs.io ({root}/graphs/io.py:1) "
        "-> fedstruct.data"
    ]
    (src / "fedstruct/graphs/io.py").write_text("")
    assert check(src) == []


def test_a_module_reading_its_own_package_s_face_is_a_cycle_when_the_face_imports_it(make_tree):
    src = make_tree(
        {
            "fl/__init__.py": "from fedstruct.fl.client import Client\nMessage = 1\n",
            "fl/client.py": "from fedstruct.fl import Message\n",
        },
    )
    assert len(check(src)) == 1
    (src / "fedstruct/fl/__init__.py").write_text("Message = 1\n")  # a lazy face
    assert check(src) == []


def test_the_script_exits_1_with_the_cycles_and_0_without(make_tree, capsys):
    bad = make_tree(
        {"graphs/a.py": "from . import b\n", "graphs/b.py": "from .a import A\n"}, "bad"
    )
    assert check_cycles.main([str(bad)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("cycle: fedstruct.graphs.a (")
    assert out.endswith("cycles: 1 import cycle(s) at import time\n")
    assert check_cycles.main([str(make_tree({"graphs/a.py": ""}, "good"))]) == 0
