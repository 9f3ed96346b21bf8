"""docs/your-data.md can be followed from a fresh clone, exactly as written.

Every command of the page's ``bash`` blocks runs the installed CLI
(``.venv/bin/...``, what ``make demo`` creates), every file it reads is either
shipped under ``examples/`` (in a folder that ``examples/make_examples.py`` writes,
so it can be made again) or written under ``runs/`` by an earlier command of the
page, and the Python blocks read only shipped files.
"""

from __future__ import annotations

import ast
import itertools
import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "your-data.md"
MAKER = ROOT / "examples" / "make_examples.py"

#: Options whose value is a file or folder the command reads.
READS = ("--site", "--sites", "--data", "--graph", "--truth", "--config", "--resume")
#: Subcommands whose first argument is a run folder they read.
READ_RUN = ("show", "predict", "query", "sample", "export")


def code_blocks(text: str, language: str) -> list[str]:
    """The bodies of the page's fenced blocks in ``language``."""
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.M | re.S)


def commands(block: str) -> list[str]:
    """One string per command of a bash block: continuation lines joined, comments
    and blank lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", block)
    lines = (re.sub(r"(^|\s)#.*$", "", line).strip() for line in joined.splitlines())
    return [line for line in lines if line]


def expand(command: str) -> list[str]:
    """``command`` with a ``$(for v in A B; do echo ...; done)`` or a ``for v in
    files/*.csv`` loop written out: one copy of each loop value."""
    loop = re.search(r"for (\w+) in ([^;]+);", command)
    if not loop:
        return [command]
    var, values = loop.group(1), loop.group(2).split()
    if any("*" in v for v in values):
        values = sorted(str(p.relative_to(ROOT)) for v in values for p in ROOT.glob(v))
        assert values, f"{loop.group(2)} matches no file: {command}"
    return [command.replace(f"${var}", v) for v in values]


def words(command: str) -> list[str]:
    """The command's words, with ``&`` and the ``$(...)`` brackets as separators."""
    return shlex.split(re.sub(r"\$\(|[()&;]", " ", command))


def read_paths(command: str) -> list[str]:
    """The files and run folders ``command`` reads."""
    parts = words(command)
    out = [v for opt, v in itertools.pairwise(parts) if opt in READS]
    out = [v.split("=", 1)[1] if re.match(r"^[\w.-]+=", v) else v for v in out]  # NAME=PATH
    if len(parts) > 1 and parts[0].endswith("fedstruct") and parts[1] in READ_RUN:
        out.append(parts[2])
    return out


def page_commands() -> list[str]:
    text = PAGE.read_text()
    return [c for block in code_blocks(text, "bash") for c in commands(block)]


def made_folders() -> set[str]:
    """The example folders make_examples.py writes: its MAKERS' function names."""
    tree = ast.parse(MAKER.read_text())
    makers = next(
        n.value
        for n in tree.body
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "MAKERS"
    )
    names = makers.generators[0].iter.elts
    return {n.id.replace("_", "-") for n in names}


def test_every_command_runs_the_installed_cli():
    allowed = (".venv/bin/fedstruct ", ".venv/bin/python ", "export ")
    odd = [c for c in page_commands() if not c.startswith(allowed)]
    assert not odd, f"commands a new user cannot run as written: {odd}"


def test_every_file_a_command_reads_ships_or_is_written_before():
    written: set[str] = set()
    shipped = made_folders()
    for command in page_commands():
        for copy in expand(command):
            for path in read_paths(copy):
                top = Path(path).parts[0]
                if top == "runs":
                    assert path in written, f"{path} is read before a command writes it: {copy}"
                    continue
                assert top == "examples", f"{path} is not a shipped example file: {copy}"
                assert (ROOT / path).exists(), f"{path} does not exist: {copy}"
                assert Path(path).parts[1] in shipped, f"make_examples.py does not write {path}"
        out = re.search(r"--out (\S+)", command)
        if out:
            written.add(out.group(1))


def test_every_example_path_the_page_names_exists():
    text = PAGE.read_text()
    named = set(re.findall(r"examples/[\w./$*-]*\w", text)) - {"examples/make_examples.py"}
    named = {n for n in named if "*" not in n and "$" not in n}
    missing = sorted(n for n in named if not (ROOT / n).exists())
    assert not missing, f"docs/your-data.md names files that do not ship: {missing}"


def test_the_checks_catch_a_file_nobody_ships():
    command = ".venv/bin/fedstruct run fedngm --site educ-low.csv --site a=examples/x/$k.csv"
    assert read_paths(command) == ["educ-low.csv", "examples/x/$k.csv"]
    assert "--site h-2.csv" in expand("x $(for k in 1 2; do echo --site h-$k.csv; done)")[1]
    assert read_paths(".venv/bin/fedstruct query runs/a --target v") == ["runs/a"]
    assert "anes96-missing" in made_folders()
