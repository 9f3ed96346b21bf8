"""Recipes reproducing CAFE's tables (I-IV), its curves (Fig. 5) and its ablation (Fig. 6).

Every recipe runs the five algorithms (FedAvg, FedProx, MOON, FedProto, CAFE) — or,
for the ablation, CAFE without each module — over one swept setting, on the offline
image sets (digits-LT and MNIST-LT), or on a user's files with ``--dataset fmnist |
cifar10 | cifar100 --data-dir PATH``. Fixed settings follow the paper's main setting
(§VI-A): 100 clients, 10 % sampled per round, Dir 0.1, CF 0.1, 5 local epochs.
Full size: 200 rounds and 3 seeds; ``--quick``: 20 clients, 20 rounds, 2 local
epochs, one seed (minutes on 2 cores). Each writes ``results.json``, ``results.md``
(mean ± std of the final accuracy per algorithm and setting) and a bar chart;
``cafe-curves`` draws the test accuracy and the training loss against the rounds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from fedstruct.data.datasets.images import IMAGE_DATASETS
from fedstruct.drawing.plots import plot_bars, plot_curves
from fedstruct.errors import ConfigError, unknown_choice_message
from fedstruct.runs.compare import (
    available_cpus,
    compare_variants,
    seed_count,
    write_results,
)
from fedstruct.runs.recipes import Recipe, RecipeReport, register_recipe

__all__ = ["ABLATION", "LABELS", "OFFLINE"]

#: Data sets the recipes run when no ``--dataset`` is given (they ship offline).
OFFLINE = ("digits", "mnist")
#: Algorithm -> the label in the tables.
LABELS = {"fedavg": "FedAvg", "fedprox": "FedProx", "moon": "MOON", "fedproto": "FedProto",
          "cafe": "CAFE"}  # fmt: skip
#: The ablation's variants (Fig. 6): CAFE without one module at a time.
ABLATION: dict[str, dict[str, Any]] = {
    "CAFE": {},
    "w/o FC": {"feature_calibration": False},
    "w/o PC": {"parameter_calibration": False},
    "w/o HA": {"history_average": False},
    "FedAvg": {"algorithm": "fedavg"},
}
_FULL: dict[str, Any] = {"rounds": 200}
_QUICK: dict[str, Any] = {"clients": 20, "rounds": 20, "local_epochs": 2, "eval_every": 5}
#: Rounds between test evaluations of ``cafe-curves`` (points on its accuracy curve).
_CURVE_EVERY = {True: 2, False: 5}


def _datasets(dataset: str | None, data_dir: Path | None) -> list[dict[str, Any]]:
    if dataset is None:
        if data_dir is not None:
            raise ConfigError("--data-dir needs --dataset (fmnist, cifar10 or cifar100)")
        return [{"dataset": d} for d in OFFLINE]
    if dataset not in IMAGE_DATASETS:
        raise ConfigError(unknown_choice_message("dataset", dataset, IMAGE_DATASETS))
    return [{"dataset": dataset, "data_dir": None if data_dir is None else str(data_dir)}]


def _sweep(
    title: str,
    setting: str | None,
    values: tuple[Any, ...],
    variants: dict[str, dict[str, Any]],
    quick: bool,
    out: Path,
    seeds: range,
    dataset: str | None,
    data_dir: Path | None,
) -> RecipeReport:
    """Run every variant at every value of ``setting`` on every data set; tabulate
    the final accuracy: one row per variant, one column per (data set, value)."""
    base = dict(_QUICK if quick else _FULL)
    rows: dict[str, dict[str, Any]] = {name: {"name": name} for name in variants}
    columns: list[str] = []
    bars: dict[str, dict[str, float]] = {}
    for data in _datasets(dataset, data_dir):
        for value in values:
            column = data["dataset"] + ("" if setting is None else f" {setting}={value}")
            columns.append(column)
            common = {**base, **data, **({} if setting is None else {setting: value})}
            comparison = compare_variants(
                "cafe", variants, seeds, out / column.replace(" ", "_").replace("=", "-"),
                common=common, progress=False,
            )  # fmt: skip
            for summary in comparison.summary(["accuracy"]):
                row = rows[summary["variant"]]
                row[column] = summary["accuracy"]
                row[column + "_std"] = summary["accuracy_std"] if len(seeds) > 1 else None
                bars.setdefault(column, {})[summary["variant"]] = summary["accuracy"]
    for row in rows.values():
        for key in [k for k, v in row.items() if v is None]:
            del row[key]
    plot_bars(bars, out / "accuracy.png", title=title, ylabel="test accuracy")
    table = write_results(out, list(rows.values()), columns, f"{title} ({seed_count(seeds)})")
    return RecipeReport(table, out)


def _methods() -> dict[str, dict[str, Any]]:
    return {label: {"algorithm": name} for name, label in LABELS.items()}


def _register(name: str, summary: str, title: str, setting: str | None, values: tuple) -> None:
    def run(
        quick: bool,
        out: Path,
        seeds: range,
        dataset: str | None = None,
        data_dir: Path | None = None,
    ) -> RecipeReport:
        variants = ABLATION if setting is None else _methods()
        return _sweep(title, setting, values, variants, quick, out, seeds, dataset, data_dir)

    register_recipe(Recipe(name, summary, run, options=("dataset", "data_dir"), seed_counts=(1, 3)))


def _curves(
    quick: bool,
    out: Path,
    seeds: range,
    dataset: str | None = None,
    data_dir: Path | None = None,
    jobs: int | None = None,
) -> RecipeReport:
    """Fig. 5 (and the loss of the paper's text after it): the five algorithms in the
    main setting (Dir 0.1, CF 0.1, 10 % sampling, 5 local epochs), the test accuracy
    and the clients' mean training loss against the rounds, one figure each per data
    set (``accuracy_<data set>.png``, ``loss_<data set>.png``); the table gives the
    final and the best accuracy. The loss is each algorithm's own training objective
    (MOON's includes its contrastive term, FedProx's its proximal term), averaged over
    the clients that replied, then over blocks of ``eval_every`` rounds
    (:func:`block_means`): the runs record no test loss. ``jobs``:
    runs at a time (default: one per CPU)."""
    base = {**(_QUICK if quick else _FULL), "eval_every": _CURVE_EVERY[quick]}
    return curve_figures(_datasets(dataset, data_dir), seeds, base, out, jobs)


def curve_figures(
    datasets: list[dict[str, Any]],
    seeds: range,
    base: dict[str, Any],
    out: Path,
    jobs: int | None = None,
) -> RecipeReport:
    """Run the five algorithms on each data set; draw their accuracy and loss per
    round and tabulate the final and best accuracy (the body of ``cafe-curves``,
    callable with fewer seeds for runs by hand)."""
    rows: list[dict[str, Any]] = []
    for data in datasets:
        name = data["dataset"]
        comparison = compare_variants(
            "cafe", _methods(), seeds, out / name, common={**base, **data}, progress=False,
            jobs=available_cpus() if jobs is None else jobs,
        )  # fmt: skip
        plot_curves(
            comparison.curves("test_accuracy"),
            out / f"accuracy_{name}.png",
            title=f"CAFE Fig. 5: test accuracy per round, {name}",
            xlabel="round",
            ylabel="test accuracy",
        )
        every = base["eval_every"]
        plot_curves(
            {k: block_means(v, every) for k, v in comparison.curves("train_loss").items()},
            out / f"loss_{name}.png",
            title=f"CAFE Fig. 5: training loss, {name}",
            xlabel="round",
            ylabel=f"training loss (clients' mean, per {every} rounds)",
        )
        for row in comparison.rows(["accuracy", "best_accuracy"]):
            kept = {k: v for k, v in row.items() if len(seeds) > 1 or not k.endswith("_std")}
            rows.append({**kept, "name": f"{name} | {row['name']}"})
    title = f"CAFE Fig. 5: accuracy after {base['rounds']} rounds ({seed_count(seeds)})"
    table = write_results(out, rows, ["accuracy", "best_accuracy"], title)
    return RecipeReport(table, out)


def block_means(points: list[tuple[float, float]], width: int) -> list[tuple[float, float]]:
    """The mean of the ``(round, value)`` points in each block of ``width`` rounds
    (rounds 1..w, w+1..2w, ...), placed at the block's last round; blocks without a
    point are left out. A round's training loss comes from the one or two clients that
    replied, so single rounds are noise."""
    blocks: dict[int, list[float]] = {}
    for rnd, value in points:
        blocks.setdefault(-(-int(rnd) // width), []).append(value)
    return [(float(b * width), float(np.mean(v))) for b, v in sorted(blocks.items())]


register_recipe(
    Recipe("cafe-curves", "CAFE Fig. 5: test accuracy and training loss against the rounds",
           _curves, options=("dataset", "data_dir", "jobs"), seed_counts=(1, 3))
)  # fmt: skip
_register("cafe-dirichlet", "CAFE Table I: accuracy under Dir 0.1 / 0.5 / 1.0 label skew",
          "CAFE Table I: label skew", "skew_alpha", (0.1, 0.5, 1.0))  # fmt: skip
_register("cafe-cf", "CAFE Table II: accuracy under communication frequency 0.1 / 0.5 / 1.0",
          "CAFE Table II: communication frequency", "report_rate", (0.1, 0.5, 1.0))  # fmt: skip
_register("cafe-sampling", "CAFE Table III: accuracy at client sampling rates 10 / 30 / 50 %",
          "CAFE Table III: sampling rate", "sample_rate", (0.1, 0.3, 0.5))  # fmt: skip
_register("cafe-epochs", "CAFE Table IV: accuracy with 5 / 10 / 20 local epochs",
          "CAFE Table IV: local epochs", "local_epochs", (5, 10, 20))  # fmt: skip
_register("cafe-ablation", "CAFE Fig. 6: CAFE without feature calibration, parameter "
          "calibration or history-aware averaging (Dir 0.1, CF 0.1)",
          "CAFE ablation", None, (None,))  # fmt: skip
