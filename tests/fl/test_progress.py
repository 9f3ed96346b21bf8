"""Progress on stderr: one plain line per round when stderr is not a terminal (under
``nohup`` or into a log file a rich bar shows nothing until the run ends)."""

from __future__ import annotations

import re

from fedstruct.fl.federation import ServerAlgorithm, run_federation
from fedstruct.fl.grid import LocalGrid
from fedstruct.fl.progress import elapsed_text, show_progress


class Counting(ServerAlgorithm[int]):
    """Counts its rounds; talks to no client."""

    rounds = 3

    def init_state(self) -> int:
        return 0

    def run_round(self, grid, state: int, rnd: int) -> int:
        return state + 1

    def describe(self, state: int) -> str:
        return f"count {state}"


def test_a_run_prints_one_line_per_round_when_stderr_is_not_a_terminal(capsys):
    state, last = run_federation(Counting(), LocalGrid([]), progress=True, label="demo")
    assert (state, last) == (3, 3)
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 3
    for k, line in enumerate(lines, start=1):
        assert re.fullmatch(rf"demo: round {k}/3 · count {k} · \d+:\d\d:\d\d elapsed", line), line


def test_no_progress_prints_nothing(capsys):
    run_federation(Counting(), LocalGrid([]), progress=False)
    assert capsys.readouterr().err == ""


def test_plain_lines_are_spaced_but_the_last_always_shows(capsys):
    with show_progress("pairs", 1000, every=3600) as bar:
        for _ in range(1000):
            bar.advance("depth 1")
        for _ in range(3):  # work after the last step (nothing left to count)
            bar.update(1000)
    lines = capsys.readouterr().err.strip().splitlines()
    assert [line.split(" · ")[0] for line in lines] == ["pairs: 1/1000", "pairs: 1000/1000"]


def test_elapsed_text_reads_like_a_clock():
    assert elapsed_text(3725.9) == "1:02:05"
