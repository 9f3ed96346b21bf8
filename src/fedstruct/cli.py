"""The ``fedstruct`` command line.

``fedstruct run METHOD ... --out DIR``, ``fedstruct reproduce RECIPE [--quick]``,
``fedstruct datasets`` and ``fedstruct demo``. Bad input exits with code 2 and a
one-line reason; ``--help`` works everywhere.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from fedstruct.errors import ConfigError, FedstructError

F = TypeVar("F", bound=Callable[..., Any])

app = typer.Typer(
    name="fedstruct",
    help="Federated learning of structured models: causal graphs, concept-based models, "
    "neural graphical models and drift-aware classifiers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out_console = Console()
err_console = Console(stderr=True)


def _bad_input_exits_2(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except FedstructError as exc:
            err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
            raise typer.Exit(code=2) from None

    return wrapper  # type: ignore[return-value]


@app.command()
@_bad_input_exits_2
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
        "categorical random-MLP SCMs, linear-Gaussian SCMs with latents, random-CPT networks."
    )


@app.command()
@_bad_input_exits_2
def run(
    method: Annotated[str, typer.Argument(help="Method to run (e.g. fedavg).")],
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Results folder (config.json, metrics.json, plots)."),
    ] = None,
    network: Annotated[str | None, typer.Option(help="Benchmark network or data set.")] = None,
    clients: Annotated[int | None, typer.Option(help="Number of clients.")] = None,
    rounds: Annotated[int | None, typer.Option(help="Communication rounds.")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed of every random draw.")] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="YAML/JSON file of settings.")
    ] = None,
    assignments: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override one setting: --set key=value (repeatable)."),
    ] = None,
    backend: Annotated[str, typer.Option(help="Where to run: local.")] = "local",
    resume: Annotated[
        Path | None,
        typer.Option("--resume", help="Continue the interrupted run in this folder."),
    ] = None,
    stop_after: Annotated[
        int | None,
        typer.Option("--stop-after", help="Stop after this round; continue later with --resume."),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress bar.")] = False,
) -> None:
    """Run METHOD and write DIR/config.json, DIR/metrics.json and plots."""
    from fedstruct.experiments import execute
    from fedstruct.experiments.settings import load_config_file, parse_assignments

    if resume is not None:
        given = [network, clients, rounds, seed, config, assignments]
        if any(v for v in given) or (out is not None and out != resume):
            raise ConfigError(
                "--resume takes every setting from the run's config.json; give no other settings"
            )
        outcome = execute(
            method, [], resume, resume=True, progress=not quiet, stop_after=stop_after
        )
        _print_metrics(method, outcome.metrics, resume)
        return
    if out is None:
        raise ConfigError("--out DIR is required: the folder for config.json, metrics.json, plots")
    options = {"network": network, "clients": clients, "rounds": rounds, "seed": seed}
    layers = [
        load_config_file(config) if config else {},
        {k: v for k, v in options.items() if v is not None},
        parse_assignments(assignments or []),
    ]
    outcome = execute(
        method, layers, out, progress=not quiet, backend=backend, stop_after=stop_after
    )
    _print_metrics(method, outcome.metrics, out)


@app.command()
@_bad_input_exits_2
def reproduce(
    recipe: Annotated[str, typer.Argument(help="Recipe name (see --list).")] = "",
    quick: Annotated[bool, typer.Option("--quick", help="Minutes instead of hours.")] = False,
    out: Annotated[Path | None, typer.Option("--out", help="Results folder.")] = None,
    list_recipes: Annotated[bool, typer.Option("--list", help="List the recipes.")] = False,
) -> None:
    """Reproduce a paper's table or figure with a named recipe."""
    from fedstruct.experiments.recipes import recipe_list, run_recipe

    if list_recipes or not recipe:
        table = Table(title="Recipes")
        table.add_column("name")
        table.add_column("reproduces", overflow="fold")
        for entry in recipe_list():
            table.add_row(entry.name, entry.summary)
        out_console.print(table)
        return
    folder = out or Path("results") / (recipe + ("-quick" if quick else ""))
    report = run_recipe(recipe, quick=quick, out=folder)
    out_console.print(report.table)
    out_console.print(f"results in [bold]{folder}[/]")


@app.command()
@_bad_input_exits_2
def demo(
    out: Annotated[Path, typer.Option("--out", help="Results folder.")] = Path("results/demo"),
) -> None:
    """A two-minute tour: federations under realistic participation, with plots."""
    from fedstruct.experiments.demo import run_demo

    report = run_demo(out)
    out_console.print(report.table)
    out_console.print(f"results and plots in [bold]{out}[/]")


def _print_metrics(method: str, metrics: dict[str, float], out: Path) -> None:
    table = Table(title=f"{method}: metrics")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in metrics.items():
        table.add_row(key, f"{value:.4g}" if isinstance(value, float) else str(value))
    out_console.print(table)
    out_console.print(f"written to [bold]{out}[/]")


def main() -> None:
    """Entry point of the ``fedstruct`` script."""
    app()


if __name__ == "__main__":
    main()
