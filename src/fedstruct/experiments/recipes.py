"""Named recipes for ``fedstruct reproduce RECIPE [--quick]``.

Each recipe runs a fixed, versioned set of experiments into a results folder
(``results.json``, plots, one sub-folder per run) and returns a table. ``--quick``
runs the same design at a size that takes minutes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.table import Table

from fedstruct.errors import ConfigError, unknown_choice_message
from fedstruct.experiments.compare import compare_variants

__all__ = ["Recipe", "RecipeReport", "recipe_list", "register_recipe", "run_recipe"]


@dataclass(frozen=True)
class RecipeReport:
    """What a recipe shows: a table, and the folder it wrote."""

    table: Table
    out: Path


@dataclass(frozen=True)
class Recipe:
    """A named, reproducible set of experiments.

    ``options`` names the keyword options ``run`` accepts besides ``quick`` and
    ``out`` (e.g. the CAFE recipes' ``dataset`` and ``data_dir``, for files a user
    already has).
    """

    name: str
    summary: str
    run: Callable[..., RecipeReport]
    options: tuple[str, ...] = ()


#: FedAvg under the participation regimes of real federations.
PARTICIPATION_VARIANTS: dict[str, dict[str, object]] = {
    "full participation": {},
    "50% sampled per round": {"sample_rate": 0.5},
    "30% dropout": {"dropout": 0.3},
    "stragglers past deadline": {"straggler_rate": 0.3, "deadline": 2.0},
    "late joiners + leavers": {"late_fraction": 0.5, "leave_fraction": 0.25},
    "CF 0.3, stale merged": {"report_rate": 0.3, "always_report": 0.25, "staleness_exponent": 0.5},
    "CF 0.3, stale ignored": {"report_rate": 0.3, "always_report": 0.25},
}


def _fedavg_participation(quick: bool, out: Path) -> RecipeReport:
    common = {
        "network": "alarm",
        "clients": 10,
        "partition": "label-skew",
        "dirichlet_alpha": 0.3,
        "rounds": 10 if quick else 30,
        "samples": 5000 if quick else 20000,
    }
    seeds = [0] if quick else [0, 1, 2]
    comparison = compare_variants("fedavg", PARTICIPATION_VARIANTS, seeds, out, common=common)
    metrics = ["test_accuracy", "mean_clients_answered", "bytes_up"]
    comparison.save(
        out, metrics, "test_accuracy", "FedAvg on alarm (BP) under participation regimes"
    )
    return RecipeReport(comparison.table(metrics, "fedavg-participation"), out)


_RECIPES: dict[str, Recipe] = {}


def register_recipe(recipe: Recipe) -> Recipe:
    """Add a recipe (each method's recipe module registers its own on import)."""
    _RECIPES[recipe.name] = recipe
    return recipe


register_recipe(
    Recipe(
        "fedavg-participation",
        "FedAvg on alarm/BP, 10 label-skewed clients, under sampling, dropout, "
        "stragglers, late joiners and communication frequency (runtime showcase)",
        _fedavg_participation,
    )
)


def recipe_list() -> list[Recipe]:
    """Every recipe, by name."""
    return [_RECIPES[k] for k in sorted(_RECIPES)]


def run_recipe(name: str, *, quick: bool, out: Path, **options: object) -> RecipeReport:
    """Run recipe ``name`` into ``out``; ``options`` that are ``None`` are not given.

    Raises
    ------
    ConfigError
        For an unknown recipe (listing the valid ones), or an option the recipe does
        not take.
    """
    if name not in _RECIPES:
        raise ConfigError(unknown_choice_message("recipe", name, _RECIPES))
    recipe = _RECIPES[name]
    given = {k: v for k, v in options.items() if v is not None}
    for key in given:
        if key not in recipe.options:
            takes = ", ".join(f"--{o.replace('_', '-')}" for o in recipe.options) or "none"
            raise ConfigError(
                f"recipe {name!r} takes no --{key.replace('_', '-')} option (it takes: {takes})"
            )
    return recipe.run(quick, out, **given)
