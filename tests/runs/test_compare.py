"""Runs of a comparison, one at a time or several at a time in worker processes."""

from __future__ import annotations

import pytest

from fedstruct.errors import ConfigError
from fedstruct.runs.compare import execute_all, seed_count, write_results
from fedstruct.runs.contract import runnable


def test_runs_in_workers_give_the_runs_of_this_process(tmp_path, capsys):
    quick = dict(runnable("fedavg").quick)
    runs = [([quick, {"seed": seed}], tmp_path / mode / f"seed-{seed}")
            for mode in ("here", "workers") for seed in (0, 1)]  # fmt: skip
    here = execute_all("fedavg", runs[:2], progress=False)
    workers = execute_all("fedavg", runs[2:], jobs=2)
    assert "fedavg runs, 2 at a time" in capsys.readouterr().err  # the runs done, shown
    assert [o.metrics for o in workers] == [o.metrics for o in here]
    assert here[0].metrics != here[1].metrics  # the seeds differ: the order is kept
    assert here[0].model is not None and workers[0].model is None
    assert all((folder / "metrics.json").is_file() for _, folder in runs)


@pytest.mark.parametrize("jobs", [0, 1.5, True])
def test_jobs_must_be_a_positive_integer(tmp_path, jobs):
    with pytest.raises(ConfigError, match=f"jobs is {jobs!r}; give an integer >= 1"):
        execute_all("fedavg", [], jobs=jobs)


def test_a_name_of_several_parts_takes_one_label_column_per_part(tmp_path):
    rows = [
        {"name": "ER-2 | 10k+2k", "shd": 0.0, "shd_std": 0.0},
        {"name": "centralized", "shd": 1.0},
    ]
    write_results(tmp_path, rows, ["shd"], "t")
    table = (tmp_path / "results.md").read_text().splitlines()[2:]
    assert table == [
        "|  |  | shd |",
        "|---|---|---|",
        "| ER-2 | 10k+2k | 0.000 ± 0.000 |",
        "| centralized |  | 1.000 |",
    ]


@pytest.mark.parametrize(
    ("seeds", "text"),
    [(range(1), "1 seed"), (range(5), "5 seeds"), ([0, 1, 2], "3 seeds"), ([], "0 seeds")],
)
def test_a_table_title_counts_its_seeds_in_words(seeds, text):
    assert seed_count(seeds) == text
