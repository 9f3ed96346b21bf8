"""Named recipes for ``fedstruct reproduce RECIPE [--quick]``.

Each recipe runs a fixed, versioned set of experiments into a results folder
(``results.json``, plots, one sub-folder per run) and returns a table. ``--quick``
runs the same design at a size that takes minutes. ``--seeds K`` runs the design
with the first ``K`` of the recipe's seeds (at full size or with ``--quick``): every
recipe declares its seed counts (:attr:`Recipe.seed_counts`), :func:`run_recipe` picks
the seeds with :func:`recipe_seeds` and passes them to the recipe as ``seeds=``, and
the folder's ``recipe.json`` records the seeds that ran.

A method's recipes live in its run package's ``recipes`` module
(``fedstruct/methods/NAME/recipes.py``), which registers them when imported;
recipes that combine methods live in :data:`SHARED_RECIPES`. They are imported when
``fedstruct reproduce`` first asks for a recipe, never by a run.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from collections.abc import Callable, Mapping
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
    "recipe_seeds",
    "register_recipe",
    "run_recipe",
]

#: Modules of the recipes that combine several methods (each registers its own).
SHARED_RECIPES = ("fedstruct.reproduction.compositions", "fedstruct.reproduction.robustness")


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
    already has). ``seed_counts``: how many seeds the recipe runs ``(with --quick, at
    full size)``; a recipe that has them is called with ``seeds=`` (the seeds to run,
    :func:`recipe_seeds`), one that has none (``None``) without.
    """

    name: str
    summary: str
    run: Callable[..., RecipeReport]
    options: tuple[str, ...] = ()
    seed_counts: tuple[int, int] | None = None


_RECIPES: dict[str, Recipe] = {}

#: The name of the file in a recipe's folder that records the seeds a ``--seeds`` run ran.
RECORD = "recipe.json"


def recipe_seeds(recipe: Recipe, quick: bool, count: int | None = None) -> range:
    """The seeds ``recipe`` runs: the first ``count`` of its seeds at this size
    (:attr:`Recipe.seed_counts`), or all of them for ``None``.

    Raises
    ------
    ConfigError
        For a recipe that has no seeds of its own, or a ``count`` below 1 or above the
        recipe's at this size.
    """
    if recipe.seed_counts is None:
        raise ConfigError(
            f"recipe {recipe.name!r} runs no seeds of its own, so --seeds does not apply; "
            "run it without --seeds"
        )
    own = range(recipe.seed_counts[0] if quick else recipe.seed_counts[1])
    k = len(own) if count is None else count
    if not 1 <= k <= len(own):
        size = "with --quick" if quick else "at full size"
        raise ConfigError(
            f"--seeds {k}: recipe {recipe.name!r} has {len(own)} "
            f"seed{'s' * (len(own) > 1)} {size}; give --seeds from 1 to {len(own)}"
        )
    return own[:k]


def register_recipe(recipe: Recipe) -> Recipe:
    """Add a recipe (each method's recipe module registers its own on import)."""
    _RECIPES[recipe.name] = recipe
    return recipe


def recipe_list() -> list[Recipe]:
    """Every recipe, by name."""
    _import_recipes()
    return [_RECIPES[k] for k in sorted(_RECIPES)]


def _import_recipes() -> None:
    """Import every method's ``recipes`` module and :data:`SHARED_RECIPES`, which
    register their recipes (:func:`recipes_module`)."""
    modules = [recipes_module(method_modules(name).run) for name in method_names("run")]
    for module in [*modules, *SHARED_RECIPES]:
        if module is not None:
            importlib.import_module(module)


def recipes_module(run: str | None) -> str | None:
    """The ``recipes`` module of the method whose run module is ``run``: inside the
    run package (``toy_method.run.recipes``), else beside the run module
    (``fedstruct.methods.fcm.recipes`` beside ``fedstruct.methods.fcm.runnable``);
    ``None`` when there is none."""
    if run is None:
        return None
    for module in (f"{run}.recipes", f"{run.rpartition('.')[0]}.recipes"):
        if module != ".recipes" and _exists(module):
            return module
    return None


def _exists(module: str) -> bool:
    """Whether ``module`` can be imported (its parent package is imported to know)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the parent is a module, not a package
        return False


def run_recipe(
    name: str, *, quick: bool, out: Path, seeds: int | None = None, **options: object
) -> RecipeReport:
    """Run recipe ``name`` into ``out``; ``options`` that are ``None`` are not given.

    ``seeds``: run the recipe's design with the first ``seeds`` of its seeds
    (:func:`recipe_seeds`, decided here before anything runs and passed to the recipe
    as ``seeds=``) and record them in ``out/recipe.json``; ``None``: all of them, and
    the folder is as it always was.

    Raises
    ------
    ConfigError
        For an unknown recipe (listing the valid ones), an option the recipe does not
        take, or a seed count the recipe does not have.
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
    if seeds is not None and (isinstance(seeds, bool) or not isinstance(seeds, int)):
        raise ConfigError(f"--seeds {seeds!r}: give a whole number of seeds, e.g. --seeds 1")
    if recipe.seed_counts is None and seeds is None:
        return recipe.run(quick, out, **given)
    chosen = recipe_seeds(recipe, quick, seeds)
    report = recipe.run(quick, out, seeds=chosen, **given)
    if seeds is not None or _is_record(out / RECORD, name):
        _write_record(out, recipe, quick, seeds, given)
    return report


def _is_record(path: Path, recipe: str) -> bool:
    """Whether ``path`` is the record an earlier ``--seeds`` run of ``recipe`` wrote."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and record.get("recipe") == recipe and "command" in record


def _write_record(
    out: Path, recipe: Recipe, quick: bool, count: int | None, options: Mapping[str, object]
) -> None:
    """Write ``out/recipe.json``: the recipe, its size, the seeds that ran (of how
    many) and the command that runs it again. Written by a ``--seeds`` run, and
    rewritten by any later run of the recipe into the same folder so that it never
    goes stale."""
    command = ["fedstruct", "reproduce", recipe.name, *(["--quick"] if quick else [])]
    command += _option_words(options)
    if count is not None:
        command += ["--seeds", str(count)]
    record = {
        "recipe": recipe.name,
        "quick": quick,
        "seeds": list(recipe_seeds(recipe, quick, count)),
        "of": len(recipe_seeds(recipe, quick)),
        "command": " ".join(command),
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / RECORD).write_text(json.dumps(record, indent=2) + "\n")


def _option_words(options: Mapping[str, object]) -> list[str]:
    """The recipe's options as command-line words (``data_dir`` -> ``--data-dir PATH``)."""
    return [w for k, v in options.items() for w in (f"--{k.replace('_', '-')}", str(v))]
