"""``fedstruct reproduce`` (the papers' recipes), ``fedstruct demo`` and ``fedstruct
datasets``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

if TYPE_CHECKING:  # imported when a command runs, and then only the method it runs
    pass

from fedstruct.cli.app import (
    app,
    bad_input_exits_2,
    out_console,
)


@app.command()
@bad_input_exits_2
def datasets() -> None:
    """List the data sets that ship with fedstruct (no downloads needed)."""
    from fedstruct.data import list_networks

    table = Table(title="Benchmark Bayesian networks (offline)")
    for col in ("name", "nodes", "edges", "source", "description"):
        table.add_column(col, overflow="fold")
    for info in list_networks():
        table.add_row(
            info.name, str(info.n_nodes), str(info.n_edges), info.source, info.description
        )
    out_console.print(table)
    out_console.print(
        "Synthetic generators: random DAGs (ER, chain, bidiag, collider, jungle, full), "
        "categorical random-MLP SCMs, random-CPT networks, mixed-type SCMs (FedNGM)."
    )


@app.command()
@bad_input_exits_2
def reproduce(
    recipe: Annotated[str, typer.Argument(help="Recipe name (see --list).")] = "",
    quick: Annotated[bool, typer.Option("--quick", help="Minutes instead of hours.")] = False,
    out: Annotated[Path | None, typer.Option("--out", help="Results folder.")] = None,
    list_recipes: Annotated[bool, typer.Option("--list", help="List the recipes.")] = False,
    dataset: Annotated[
        str | None, typer.Option(help="Data set of a recipe that takes one (cafe-*).")
    ] = None,
    data_dir: Annotated[
        Path | None, typer.Option(help="Folder with the data set's files (fmnist, cifar).")
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option(
            help="Runs at a time, one CPU thread each (discover-then-*, cafe-curves; "
            "default: one per CPU)."
        ),
    ] = None,
    rate: Annotated[
        float | None,
        typer.Option(
            help="Share of its graph's edges a lying client perturbs "
            "(aggregator-robustness; default 0.3)."
        ),
    ] = None,
    seeds: Annotated[
        int | None,
        typer.Option(
            help="Run the recipe's design with only its first K seeds (0..K-1), at full "
            "size or with --quick; recipe.json in the results folder records them."
        ),
    ] = None,
) -> None:
    """Reproduce a paper's table or figure with a named recipe."""
    from fedstruct.runs.recipes import recipe_list, run_recipe

    if list_recipes or not recipe:
        table = Table(title="Recipes")
        table.add_column("name")
        table.add_column("reproduces", overflow="fold")
        for entry in recipe_list():
            table.add_row(entry.name, entry.summary)
        out_console.print(table)
        return
    suffix = ("-quick" if quick else "") + ("" if seeds is None else f"-seeds{seeds}")
    folder = out or Path("results") / (recipe + suffix)
    report = run_recipe(
        recipe,
        quick=quick,
        out=folder,
        seeds=seeds,
        dataset=dataset,
        data_dir=data_dir,
        jobs=jobs,
        rate=rate,
    )
    out_console.print(report.table)
    out_console.print(f"results in [bold]{folder}[/]")


@app.command()
@bad_input_exits_2
def demo(
    out: Annotated[Path, typer.Option("--out", help="Results folder.")] = Path("results/demo"),
) -> None:
    """A two-minute tour: federations under realistic participation, with plots."""
    from fedstruct.reproduction.demo import run_demo

    report = run_demo(out)
    out_console.print(report.table)
    out_console.print(f"results and plots in [bold]{out}[/]")
