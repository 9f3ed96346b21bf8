"""Named recipes for ``fedstruct reproduce RECIPE [--quick]``.

Each recipe runs a fixed, versioned set of experiments into a results folder
(``results.json``, plots, one sub-folder per run) and returns a table. ``--quick``
runs the same design at a size that takes minutes.

A method's recipes live in its run package's ``recipes`` module
(``fedstruct/experiments/NAME/recipes.py``), which registers them when imported;
recipes that combine methods live in :data:`SHARED_RECIPES`. They are imported when
``fedstruct reproduce`` first asks for a recipe, never by a run.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.table import Table

from fedstruct.errors import ConfigError, unknown_choice_message
from fedstruct.registry import method_modules, method_names

__all__ = [
    "SHARED_RECIPES",
    "Recipe",
    "RecipeReport",
    "recipe_list",
    "register_recipe",
    "run_recipe",
]

#: Modules of the recipes that combine several methods (each registers its own).
SHARED_RECIPES = ("fedstruct.experiments.compositions", "fedstruct.experiments.robustness")


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


_RECIPES: dict[str, Recipe] = {}


def register_recipe(recipe: Recipe) -> Recipe:
    """Add a recipe (each method's recipe module registers its own on import)."""
    _RECIPES[recipe.name] = recipe
    return recipe


def recipe_list() -> list[Recipe]:
    """Every recipe, by name."""
    _import_recipes()
    return [_RECIPES[k] for k in sorted(_RECIPES)]


def _import_recipes() -> None:
    """Import every method's ``recipes`` module (in its run package, if it has one)
    and :data:`SHARED_RECIPES`, which register their recipes."""
    modules = [f"{method_modules(name).run}.recipes" for name in method_names("run")]
    for module in [*modules, *SHARED_RECIPES]:
        if _exists(module):
            importlib.import_module(module)


def _exists(module: str) -> bool:
    """Whether ``module`` can be imported (its parent package is imported to know)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the parent is a module, not a package
        return False


def run_recipe(name: str, *, quick: bool, out: Path, **options: object) -> RecipeReport:
    """Run recipe ``name`` into ``out``; ``options`` that are ``None`` are not given.

    Raises
    ------
    ConfigError
        For an unknown recipe (listing the valid ones), or an option the recipe does
        not take.
    """
    _import_recipes()
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
