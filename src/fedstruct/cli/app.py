"""The ``fedstruct`` command's application: the Typer app every command module adds to,
the consoles, one-line errors with exit status 2, and the tables of a run's metrics.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fedstruct.errors import FedstructError, FedstructWarning

if TYPE_CHECKING:  # imported when a command runs, and then only the method it runs
    pass


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


def _print_version(value: bool) -> None:
    if value:
        from fedstruct import __version__

        out_console.print(f"fedstruct {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Federated learning of structured models: causal graphs, concept-based models,
    neural graphical models and drift-aware classifiers."""


def bad_input_exits_2(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with warnings.catch_warnings():
                python_show = warnings.showwarning
                warnings.showwarning = functools.partial(_show_warning, python_show)
                return fn(*args, **kwargs)
        except FedstructError as exc:
            message = escape(str(exc))  # else a message's "[x, y]" is read as markup: gone
            err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
            raise typer.Exit(code=2) from None
        except MemoryError:
            err_console.print(
                "[bold red]error:[/] out of memory: the run needs more than this machine "
                "has; run fewer sites in one process (a deployment puts each on its own "
                "machine), bound the search (--set depth=...), or add memory",
                highlight=False,
                soft_wrap=True,
            )
            raise typer.Exit(code=1) from None

    return wrapper  # type: ignore[return-value]


def _show_warning(
    python_show: Callable[..., None], message: Any, category: type[Warning], *args: Any
) -> None:
    """Print fedstruct's own warnings as one line on stderr (others as Python does)."""
    if issubclass(category, FedstructWarning):
        err_console.print(
            f"[bold yellow]warning:[/] {escape(str(message))}", highlight=False, soft_wrap=True
        )
    else:
        python_show(message, category, *args)


def listed_names(names: Sequence[str], shown: int = 12) -> str:
    """``names`` joined, the first ``shown`` of them and how many more."""
    more = f", ... ({len(names) - shown} more)" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


#: Above this many metrics, the screen shows those of the whole federation only.
_SHORT = 30


def print_metrics(method: str, metrics: dict[str, float], out: Path) -> None:
    metrics_table(f"{method}: metrics", metrics, out)
    out_console.print(f"written to [bold]{out}[/]")


def metrics_table(title: str, metrics: dict[str, float], out: Path) -> None:
    """The run's headline metrics as a table, and where the others are."""
    shown = _headline(metrics, out)
    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in shown.items():
        table.add_row(key, f"{value:.4g}" if isinstance(value, float) else str(value))
    out_console.print(table)
    if len(shown) < len(metrics):
        out_console.print(
            f"{len(metrics) - len(shown)} more (per site) in [bold]{out / 'metrics.json'}[/]"
        )


def _headline(metrics: dict[str, float], out: Path) -> dict[str, float]:
    """``metrics`` without the per-site ones (a name holding a client's name, e.g.
    ``continuous_global_client-1_mae``) when there are more than :data:`_SHORT`."""
    if len(metrics) <= _SHORT:
        return metrics
    from fedstruct.runs.contract import read_config, runnable
    from fedstruct.runs.settings import apply_settings

    config = read_config(out)
    entry = runnable(config["method"])
    settings = apply_settings(entry.settings(), config["settings"], method=config["method"])
    names = entry.client_names(settings)
    return {k: v for k, v in metrics.items() if not any(f"_{n}_" in f"_{k}_" for n in names)}
