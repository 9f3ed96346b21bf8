"""The ``fedstruct`` command line.

``fedstruct run METHOD ... --out DIR``, ``fedstruct reproduce RECIPE [--quick] [--seeds K]``,
``fedstruct datasets`` and ``fedstruct demo``. Bad input exits with code 2 and a
one-line reason; ``--help`` works everywhere.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import click
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer.core import TyperGroup

from fedstruct.errors import ConfigError, FedstructError, FedstructWarning

if TYPE_CHECKING:  # imported when a command runs, and then only the method it runs
    from fedstruct.runs.contract import Runnable
    from fedstruct.runs.settings import SettingInfo

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


def _bad_input_exits_2(fn: F) -> F:
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
        "categorical random-MLP SCMs, random-CPT networks, mixed-type SCMs (FedNGM)."
    )


class _MethodGroup(TyperGroup):
    """``fedstruct run METHOD``: one sub-command per registered method.

    Each is built from the method's settings dataclass when it is asked for
    (:func:`method_command`), so this module names no method and no method's option.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        from fedstruct.runs.contract import runnable_names

        return list(runnable_names())

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        from fedstruct.runs.contract import runnable

        try:  # imports this method's run package only (fedstruct.registry)
            entry = runnable(cmd_name)
        except ConfigError as exc:
            raise click.UsageError(str(exc), ctx) from None
        return method_command(entry)


run_app = typer.Typer(
    cls=_MethodGroup,
    help="Run METHOD and write DIR/config.json, DIR/metrics.json and plots "
    "('fedstruct run METHOD --help' lists its settings).",
    no_args_is_help=True,
)
app.add_typer(run_app, name="run")


class _SettingsCommand(click.Command):
    """A method's ``run`` command: its help ends with every setting of the method."""

    def __init__(self, *args: Any, settings: Sequence[SettingInfo], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings = list(settings)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(f"{s.name} ({s.type}) = {s.default!r}", s.doc) for s in self.settings]
        with formatter.section("Settings (--set NAME=VALUE, or a --config FILE)"):
            formatter.write_dl(rows)


#: Options of every method's ``run`` command that are settings (flag -> setting).
COMMON_SETTINGS = {
    "clients": "clients",
    "rounds": "rounds",
    "seed": "seed",
    "site": "sites",
    "sites": "manifest",
    "node-site": "node_sites",
    "truth": "truth",
    "bootstrap": "bootstrap",
    "jobs": "jobs",
    "secure-aggregation": "secure_aggregation",
}

#: Options of every method's ``run`` command that are not settings.
RUN_OPTIONS = [
    click.Option(["--out"], type=click.Path(path_type=Path), help="Results folder."),
    click.Option(["--overwrite"], is_flag=True,
                 help="Replace the run already in --out (its files are deleted first)."),
    click.Option(["--config", "config_file"], type=click.Path(path_type=Path),
                 help="YAML/JSON file of settings."),
    click.Option(["--set", "assignments"], multiple=True, metavar="KEY=VALUE",
                 help="Override one setting (repeatable)."),
    click.Option(["--backend"], default="local", show_default=True,
                 help="Where to run: local, flower-sim or flower (a SuperLink)."),
    click.Option(["--resume"], type=click.Path(path_type=Path),
                 help="Continue the interrupted run in this folder."),
    click.Option(["--stop-after"], type=int,
                 help="Stop after this round; continue later with --resume."),
    click.Option(["--quiet"], is_flag=True, help="No progress bar."),
    click.Option(["--superlink"], default="127.0.0.1:9091", show_default=True,
                 help="--backend flower: the SuperLink's host:port."),
    click.Option(["--root-certificates"], type=click.Path(path_type=Path),
                 help="--backend flower: CA certificate of a TLS SuperLink."),
    click.Option(["--min-nodes"], type=int, default=0, show_default=True,
                 help="--backend flower: nodes to wait for before round 1 (0: all)."),
    click.Option(["--reply-timeout"], type=float, default=600.0, show_default=True,
                 help="--backend flower: seconds to wait for one exchange."),
    click.Option(["--control-key"], type=click.Path(path_type=Path),
                 help="--backend flower: private control key the SuperLink accepts "
                 "(fedstruct flower control-key)."),
]  # fmt: skip

_CLICK_TYPES: dict[str, click.ParamType] = {
    "int": click.INT,
    "float": click.FLOAT,
    "bool": click.BOOL,
}


def method_command(entry: Runnable) -> click.Command:
    """The ``fedstruct run METHOD`` command of ``entry``, built from its settings.

    Its options are the common settings (:data:`COMMON_SETTINGS`: ``--clients``,
    ``--rounds``, ``--seed``, and a user's files: ``--site``, ``--sites``,
    ``--truth``), the method's own (:attr:`Runnable.options`), each typed and
    documented by its setting, and the run options (:data:`RUN_OPTIONS`); its help
    lists every setting with its type, default and documentation.
    """
    from fedstruct.runs.settings import describe_settings

    infos = {info.name: info for info in describe_settings(entry.settings)}
    flags = {**COMMON_SETTINGS, **entry.options}
    setting_options = [
        click.Option([f"--{flag}", name], is_flag=True, default=None, help=infos[name].doc)
        if infos[name].type == "bool"  # a switch: --secure-aggregation
        else click.Option(
            [f"--{flag}", name],
            type=_CLICK_TYPES.get(infos[name].type.removesuffix(" or None"), click.STRING),
            multiple=infos[name].type == "list",
            help=infos[name].doc,
        )
        for flag, name in flags.items()
    ]

    @_bad_input_exits_2
    def callback(**given: Any) -> None:
        settings = {name: given.pop(name) for name in flags.values()}
        chosen = {k: v for k, v in settings.items() if v is not None and v != ()}
        _run_method(entry.name, chosen, **given)

    return _SettingsCommand(
        entry.name,
        callback=callback,
        params=[*setting_options, *RUN_OPTIONS],
        help=entry.summary,
        settings=list(infos.values()),
        no_args_is_help=False,
    )


def _run_method(
    method: str,
    options: dict[str, Any],
    *,
    out: Path | None,
    overwrite: bool,
    config_file: Path | None,
    assignments: Sequence[str],
    backend: str,
    resume: Path | None,
    stop_after: int | None,
    quiet: bool,
    superlink: str,
    root_certificates: Path | None,
    min_nodes: int,
    reply_timeout: float,
    control_key: Path | None,
) -> None:
    """What ``fedstruct run METHOD ...`` does once its options are parsed."""
    from fedstruct.runs.contract import execute
    from fedstruct.runs.launch import make_launcher
    from fedstruct.runs.settings import load_config_file, parse_assignments

    if resume is not None:
        given = options or config_file or assignments or overwrite
        if given or (out is not None and out != resume):
            raise ConfigError(
                "--resume takes every setting from the run's config.json; give no other settings"
            )
        with _stop_message(resume):
            outcome = execute(
                method, [], resume, resume=True, progress=not quiet, stop_after=stop_after
            )
        _print_metrics(method, outcome.metrics, resume)
        _print_kinds(outcome.kinds)
        return
    if out is None:
        raise ConfigError("--out DIR is required: the folder for config.json, metrics.json, plots")
    layers = [
        load_config_file(config_file) if config_file else {},
        options,
        parse_assignments(assignments),
    ]
    launcher = make_launcher(
        backend,
        {
            "superlink": superlink,
            "root_certificates": root_certificates,
            "min_nodes": min_nodes,
            "reply_timeout": reply_timeout,
            "control_key": control_key,
        },
    )
    with _stop_message(out):
        outcome = execute(
            method,
            layers,
            out,
            progress=not quiet,
            backend=launcher,
            stop_after=stop_after,
            overwrite=overwrite,
        )
    _print_metrics(method, outcome.metrics, out)
    _print_kinds(outcome.kinds)


@contextlib.contextmanager
def _stop_message(out: Path) -> Iterator[None]:
    """On Ctrl-C (SIGINT) during a run: one line saying what the folder holds and how
    to go on (:func:`~fedstruct.runs.contract.unfinished_run`), exit status 130 (as
    a shell reports an interrupted command). Before, the run stopped without a word."""
    try:
        yield
    except KeyboardInterrupt:
        from fedstruct.runs.contract import unfinished_run

        try:
            line = unfinished_run(out)
        except FedstructError:
            line = None
        line = line or f"{out}: the run stopped before it wrote its record"
        err_console.print(f"[bold yellow]stopped:[/] {escape(line)}", highlight=False,
                          soft_wrap=True)  # fmt: skip
        raise typer.Exit(code=130) from None


def _print_kinds(kinds: dict[str, str]) -> None:
    """One line per kind naming the columns that got it (a run on a user's tables)."""
    from fedstruct.data.sites import KINDS

    for kind in KINDS:
        columns = [column for column, got in kinds.items() if got == kind]
        if columns:
            out_console.print(
                f"{kind} columns ({len(columns)}): {_listed_names(columns)}",
                highlight=False,
                soft_wrap=True,
            )


def _listed_names(names: Sequence[str], shown: int = 12) -> str:
    """``names`` joined, the first ``shown`` of them and how many more."""
    more = f", ... ({len(names) - shown} more)" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


RunFolder = Annotated[Path, typer.Argument(help="The --out folder of a fedstruct run.")]


@app.command()
@_bad_input_exits_2
def show(
    folder: RunFolder,
    graph: Annotated[str, typer.Option(help="Which saved graph (e.g. definite).")] = "graph",
    picture: Annotated[
        Path | None,
        typer.Option(
            help="Where to draw it (.png, .pdf, .svg, ...; its folder must exist) "
            "[default: FOLDER/GRAPH.png, the run's own picture]."
        ),
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option(
            help="Write instead one self-contained HTML page to explore the graph: search, "
            "neighbourhoods, filters (docs/cli.md)."
        ),
    ] = None,
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite",
            help="Replace the --picture or --html file if it exists (never a run's file).",
        ),
    ] = False,
) -> None:
    """Show a run: its learned graph as a table and a picture, or a summary if it learned none."""
    from fedstruct.drawing.picture import draw_graph
    from fedstruct.fl.artifact import load
    from fedstruct.runs.artifacts import graph_title
    from fedstruct.runs.contract import unfinished_run
    from fedstruct.runs.saved_graphs import saved_graph, saved_graphs

    unfinished = unfinished_run(folder)
    if unfinished is not None:
        out_console.print(unfinished, highlight=False, soft_wrap=True)
        return
    if html is not None:
        from fedstruct.results.graph_page import write_run_page

        page = write_run_page(folder, graph, html, overwrite=overwrite)
        out_console.print(f"page: [bold]{page}[/]")
        return
    model = load(folder)
    if not saved_graphs(folder):
        _print_summary(folder)
        return
    learned, weights = saved_graph(model.method, folder, graph)
    own = folder / f"{graph}.png"  # the run's own picture of it: redrawn in place
    path = picture or own
    if not _same_file(path, own):
        _check_picture(path, overwrite, folder)
    title = graph_title(model.method, graph, learned)
    out_console.print(title)
    table = Table()
    for column in ("edge", *(["confidence"] if weights else [])):
        table.add_column(column, justify="right" if column == "confidence" else "left")
    for edge in learned.edges():
        cells = [str(edge)]
        if weights:
            value = weights.get((edge.a, edge.b))
            cells.append("" if value is None else f"{value:.3f}")
        table.add_row(*cells)
    out_console.print(table)
    for line in _mark_legend(learned.edges()):
        out_console.print(line, highlight=False)
    _print_knowledge(folder, learned.names)
    draw_graph(learned, path, title=title, weights=weights or None)
    out_console.print(f"picture: [bold]{path}[/]")


def _check_picture(path: Path, overwrite: bool, folder: Path) -> None:
    """Refuse a ``show --picture`` file that is not an image (by its suffix), whose
    folder does not exist, that is a file of the run in ``folder`` (always), or that
    exists (unless ``overwrite``)."""
    from fedstruct.drawing.picture import PICTURE_FORMATS

    suffix = path.suffix.lower().removeprefix(".")
    if suffix not in PICTURE_FORMATS:
        what = f"'.{suffix}' is not an image format" if suffix else "has no suffix"
        raise ConfigError(
            f"--picture {path}: {what}; name an image file ending in one of "
            f"{', '.join('.' + s for s in PICTURE_FORMATS)}"
        )
    if not path.parent.is_dir():
        raise ConfigError(
            f"--picture {path}: the folder {path.parent} does not exist; create it, or "
            "choose a file in an existing folder"
        )
    _check_out(path, overwrite, _run_inputs(folder), option="--picture")


#: What an edge's marks say, by the marks as ``show`` prints them (``A o-> B``).
MARK_MEANINGS = {
    "-->": "A causes B",
    "<->": "neither is claimed to cause the other; FCI's reading is a hidden common cause "
    "of both, but a test error on finite samples gives the same mark",
    "o->": "B does not cause A: A causes B, or a hidden common cause links them",
    "o-o": "linked; the data do not tell which causes which",
    "o--": "B causes A (the mark at A is left open)",
    "---": "directly dependent; no direction is claimed",
}


def _mark_legend(edges: Sequence[Any]) -> list[str]:
    """One line per kind of edge in ``edges``: its marks and what they say."""
    mirrored = {"<--": "-->", "<-o": "o->", "--o": "o--"}
    seen, turned = [], []
    for edge in edges:
        token = str(edge).split()[1]
        if token in mirrored:
            if token not in turned:
                turned.append(token)
            token = mirrored[token]
        if token not in seen:
            seen.append(token)
    order = list(MARK_MEANINGS)
    seen.sort(key=lambda t: order.index(t) if t in order else len(order))
    lines = ["marks (read 'A mark B'; 'o' is a mark the data leave open):"]
    lines += [f"  A {t} B: {MARK_MEANINGS.get(t, 'see docs/cli.md')}" for t in seen]
    lines += [f"  A {t} B reads as B {mirrored[t]} A" for t in sorted(turned)]
    return lines if seen else []


def _print_knowledge(folder: Path, names: Sequence[str]) -> None:
    """The background knowledge the run used (its knowledge.json), if any, and a
    warning if it does not fit the graph over ``names`` shown."""
    from fedstruct.discovery.knowledge import KNOWLEDGE_FILE, Knowledge
    from fedstruct.runs.knowledge import saved_knowledge_problem

    path = folder / KNOWLEDGE_FILE
    if path.is_file():
        knowledge = Knowledge.read(path)
        out_console.print(f"[bold]knowledge:[/] {knowledge.summary()} ({path})", highlight=False)
        problem = saved_knowledge_problem(knowledge, names)
        if problem:
            message = f"{path} does not fit the graph shown: {problem}"
            warnings.warn(message, FedstructWarning, stacklevel=2)


def _print_summary(folder: Path) -> None:
    """``show`` on a run that learned no graph: what ran, on what, and how it did."""
    from fedstruct.results.use import run_summary

    summary = run_summary(folder)
    out_console.print(
        f"{folder}: a {summary.method} run that learned no graph ({summary.learner})",
        highlight=False,
    )
    settings = ", ".join(f"{k}={v}" for k, v in summary.settings.items()) or "the defaults"
    for label, text in (
        ("status", summary.status),
        ("settings", settings),
        ("data", summary.data),
        ("model", summary.model),
        ("figures", ", ".join(summary.figures) or "none"),
    ):
        out_console.print(f"[bold]{label}:[/] {text}", highlight=False, soft_wrap=True)
    if summary.metrics:
        _metrics_table(f"{summary.method}: metrics", summary.metrics, folder)


Overwrite = Annotated[
    bool, typer.Option("--overwrite", help="Replace --out if it exists (never an input file).")
]


@app.command()
@_bad_input_exits_2
def predict(
    folder: RunFolder,
    data: Annotated[Path, typer.Option(help="Rows to predict (CSV, Parquet; images).")],
    out: Annotated[Path, typer.Option(help="CSV file for the predictions.")],
    target: Annotated[
        list[str] | None, typer.Option(help="A variable to predict (repeatable).")
    ] = None,
    overwrite: Overwrite = False,
) -> None:
    """Predict with a run's saved model (FedAvg, CAFE, F-CMs, FedNGM)."""
    from fedstruct.results.use import predict_file

    _check_out(out, overwrite, {data: "the --data file", **_run_inputs(folder)})
    table, unread = predict_file(folder, data, target or ())
    _write_csv(table, out)
    out_console.print(f"{len(table)} predictions of {_listed_columns(table)} written to {out}")
    if unread:
        out_console.print(f"not read (the model has no such variable): {', '.join(unread)}")


@app.command()
@_bad_input_exits_2
def sample(
    folder: RunFolder,
    n: Annotated[int, typer.Option("-n", help="Rows to draw.")],
    out: Annotated[Path, typer.Option(help="CSV file for the samples.")],
    seed: Annotated[int, typer.Option(help="Seed of the sampler.")] = 0,
    overwrite: Overwrite = False,
) -> None:
    """Draw rows from a FedNGM run's global model."""
    from fedstruct.results.use import sample as draw

    _check_out(out, overwrite, _run_inputs(folder))
    table = draw(folder, n, seed=seed)
    _write_csv(table, out)
    out_console.print(f"{len(table)} samples of {table.shape[1]} variables written to {out}")


@app.command()
@_bad_input_exits_2
def query(
    folder: RunFolder,
    target: Annotated[str, typer.Option(help="The variable whose posterior to show.")],
    given: Annotated[
        list[str] | None, typer.Option(help="Evidence COL=VALUE (repeatable).")
    ] = None,
    inference: Annotated[
        str | None,
        typer.Option(
            help="gradient or message: how the unknown variables are completed "
            "[default: the run's inference setting]."
        ),
    ] = None,
) -> None:
    """The posterior of a variable given evidence, from a FedNGM run's model."""
    from fedstruct.results.use import query as posterior

    evidence = _evidence(given or ())
    table = posterior(folder, evidence, target, inference)
    conditions = ", ".join(f"{k}={v}" for k, v in evidence.items()) or "no evidence"
    out_console.print(f"posterior of {target} given {conditions}")
    shown = Table()
    for column in table.columns:
        shown.add_column(str(column), justify="right")
    for row in table.itertuples(index=False):
        shown.add_row(*(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row))
    out_console.print(shown)


@app.command()
@_bad_input_exits_2
def export(
    folder: RunFolder,
    format: Annotated[str, typer.Option(help="json, dot, graphml, csv or bif.")],
    out: Annotated[
        Path | None, typer.Option(help="File to write [default: standard output].")
    ] = None,
    graph: Annotated[str, typer.Option(help="Which saved graph (e.g. definite).")] = "graph",
    overwrite: Overwrite = False,
) -> None:
    """Write a run's learned graph in another format (to standard output without --out)."""
    import sys
    import tempfile

    from fedstruct.runs.saved_graphs import export_graph

    if out is not None:
        _check_out(out, overwrite, _run_inputs(folder))
        path = export_graph(folder, format, out, graph)
        out_console.print(f"written to [bold]{path}[/]")
        return
    with tempfile.TemporaryDirectory(prefix="fedstruct-export-") as scratch:
        path = export_graph(folder, format, Path(scratch) / f"{graph}.{format}", graph)
        sys.stdout.write(path.read_text())
    sys.stdout.flush()


def _run_inputs(folder: Path) -> dict[Path, str]:
    """The files of the run in ``folder`` (never an --out), each with its description."""
    from fedstruct.runs.saved_graphs import run_files

    return {path: f"a file of the run in {folder}" for path in run_files(folder)}


def _check_out(out: Path, overwrite: bool, inputs: dict[Path, str], option: str = "--out") -> None:
    """Refuse an ``--out`` (or ``option``) that is one of ``inputs`` (always), a
    folder, or an existing file (unless ``overwrite``)."""
    for source, what in inputs.items():
        if _same_file(out, source):
            raise ConfigError(f"{option} {out} is {what}; write to another file")
    if out.is_dir():
        raise ConfigError(f"{option} {out} is a folder; give the name of a file")
    if out.exists() and not overwrite:
        raise ConfigError(
            f"{option} {out} exists; choose another file, or add --overwrite to replace it"
        )


def _same_file(a: Path, b: Path) -> bool:
    import os

    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist
        return False


def _evidence(pairs: Sequence[str]) -> dict[str, str]:
    evidence: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"--given {pair!r} is not COL=VALUE")
        name = name.strip()
        if name in evidence:
            raise ConfigError(
                f"--given names {name!r} twice ({name}={evidence[name]} and {pair.strip()}); "
                "give each variable once"
            )
        evidence[name] = value.strip()
    return evidence


def _write_csv(table: Any, out: Path) -> None:
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(out, index=False)
    except OSError as exc:
        reason = exc.strerror or exc
        raise ConfigError(f"cannot write {out} ({reason}); choose another --out") from exc


def _listed_columns(table: Any) -> str:
    predicted = [c for c in table.columns if not str(c).startswith("P(") and c != "label_given"]
    return ", ".join(predicted) or "nothing"


@app.command()
@_bad_input_exits_2
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
@_bad_input_exits_2
def demo(
    out: Annotated[Path, typer.Option("--out", help="Results folder.")] = Path("results/demo"),
) -> None:
    """A two-minute tour: federations under realistic participation, with plots."""
    from fedstruct.reproduction.demo import run_demo

    report = run_demo(out)
    out_console.print(report.table)
    out_console.print(f"results and plots in [bold]{out}[/]")


flower_app = typer.Typer(
    help="Run federations across machines on Flower: a SuperLink (the server's machine) "
    "and one SuperNode per institution. See docs/deploy.md.",
    no_args_is_help=True,
)
app.add_typer(flower_app, name="flower")

Home = Annotated[
    Path | None,
    typer.Option(help="FLWR_HOME for Flower's files (default: $FLWR_HOME or ~/.fedstruct/flower)."),
]
Insecure = Annotated[
    bool, typer.Option("--insecure", help="Plain-text connections (loopback tests only).")
]


def _exec(
    cmd: list[str], home: Path, control_keys: Path | None = None, runs: Path | None = None
) -> None:
    """Replace this process by a Flower daemon under fedstruct's guards (its PID stays
    ours; ``control_keys``: the SuperLink's file of control public keys; ``runs``: the
    folder its runs keep their results in)."""
    import os

    from fedstruct.deployment.contract import RUNS_ENV
    from fedstruct.fl.flower.cluster import flower_env, guarded
    from fedstruct.fl.flower.guard import CONTROL_KEYS_ENV

    home.mkdir(parents=True, exist_ok=True)
    env = flower_env(home)
    for name, value in ((CONTROL_KEYS_ENV, control_keys), (RUNS_ENV, runs)):
        env.pop(name, None)
        if value is not None:
            env[name] = str(value.resolve())
    err_console.print(" ".join(cmd), highlight=False, soft_wrap=True)
    cmd = guarded(cmd)
    os.execvpe(cmd[0], cmd, env)


@flower_app.command("superlink")
@_bad_input_exits_2
def flower_superlink(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port for SuperNodes and the flwr CLI.")] = 9091,
    certificates: Annotated[
        Path | None,
        typer.Option(
            help="Folder with ca.crt, server.pem, server.key (fedstruct flower certificates)."
        ),
    ] = None,
    insecure: Insecure = False,
    node_auth: Annotated[
        bool, typer.Option("--node-auth", help="Admit only registered SuperNode keys (TLS).")
    ] = False,
    database: Annotated[
        Path | None, typer.Option(help="SQLite file for the state (survives restarts).")
    ] = None,
    control_keys: Annotated[
        Path | None,
        typer.Option(
            help="File of control public keys (KEY.pub lines): only their holders may "
            "submit runs or register nodes. Required with --certificates."
        ),
    ] = None,
    runs: Annotated[
        Path | None,
        typer.Option(
            help="Folder submitted runs keep their results in (default: the current "
            "folder); a run whose --out is not inside it is refused."
        ),
    ] = None,
    home: Home = None,
) -> None:
    """Start the SuperLink: the coordinator every SuperNode and submitted run talks to."""
    from fedstruct.fl.flower.cluster import Link, default_home, superlink_command, write_connection
    from fedstruct.fl.flower.credentials import load_control_keys

    runs = Path.cwd() if runs is None else runs
    if not runs.is_dir():
        raise ConfigError(f"--runs {runs} is not a folder; give the folder runs keep results in")
    if certificates is None and not insecure:
        raise ConfigError("give --certificates DIR for TLS, or --insecure for loopback tests")
    cmd = superlink_command(
        host, port, certificates=certificates, node_auth=node_auth, database=database
    )
    if certificates is not None and control_keys is None:
        raise ConfigError(
            "give --control-keys FILE (public keys from 'fedstruct flower control-key'): "
            "without it anyone who can reach the SuperLink could submit runs"
        )
    if control_keys is not None:
        load_control_keys(control_keys)  # one-line error for a bad file, before starting
    home = home or default_home()
    local = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    write_connection(
        home, Link(f"{local}:{port}", certificates / "ca.crt" if certificates else None)
    )
    _exec(cmd, home, control_keys, runs)


@flower_app.command("supernode")
@_bad_input_exits_2
def flower_supernode(
    partition: Annotated[
        int | None, typer.Option(help="The partition of a built-in federation this node hosts.")
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option(help="This site's own file (table, image folder or .npz); read only here."),
    ] = None,
    name: Annotated[
        str | None, typer.Option(help="With --data: the site's name (default: the file's stem).")
    ] = None,
    graph: Annotated[
        Path | None, typer.Option(help="With --data: the site's own graph file (F-CMs).")
    ] = None,
    superlink: Annotated[str, typer.Option(help="The SuperLink's host:port.")] = "127.0.0.1:9091",
    root_certificates: Annotated[
        Path | None, typer.Option(help="CA certificate of a TLS SuperLink.")
    ] = None,
    insecure: Insecure = False,
    auth_key: Annotated[
        Path | None, typer.Option(help="This node's private key (registered at the SuperLink).")
    ] = None,
    port: Annotated[
        int | None, typer.Option(help="Local runtime port (default 9094 + partition).")
    ] = None,
    wait: Annotated[
        float, typer.Option(help="Seconds to wait for the SuperLink to be reachable.")
    ] = 60.0,
    require_secure_aggregation: Annotated[
        bool,
        typer.Option(
            "--require-secure-aggregation",
            help="Answer a request whose reply the server needs only as a sum (weights, "
            "statistics, scores) only through secure aggregation; refuse it in the clear.",
        ),
    ] = False,
    device: Annotated[
        str | None,
        typer.Option(
            help="Where this node trains torch models: auto, cpu, cuda or cuda:N "
            "(default: the run's --device setting)."
        ),
    ] = None,
    home: Home = None,
) -> None:
    """Start a SuperNode: for a site's own file (--data), or a built-in partition."""
    from fedstruct.errors import DeploymentError
    from fedstruct.fl.flower.cluster import Link, default_home, supernode_command, wait_reachable
    from fedstruct.fl.flower.control import tls_problem

    if root_certificates is None and not insecure:
        raise ConfigError("give --root-certificates CA.crt for TLS, or --insecure for loopback")
    node_config: dict[str, Any] = dict(_site_node_config(partition, data, name, graph))
    if require_secure_aggregation:
        from fedstruct.fl.flower.client_app import REQUIRE_SECURE_AGGREGATION

        node_config[REQUIRE_SECURE_AGGREGATION] = True
    if device is not None:
        from fedstruct.fl.device import resolve_device

        resolve_device(device)  # this machine runs the node: refuse a GPU it lacks now
        node_config["device"] = device
    link = Link(superlink, root_certificates)
    cmd = supernode_command(
        partition,
        link,
        port=9094 + (partition or 0) if port is None else port,
        auth_key=auth_key,
        node_config=node_config,
    )
    wait_reachable(link, wait)
    problem = tls_problem(link)
    if problem is not None:
        raise DeploymentError(problem)
    _exec(cmd, home or default_home())


def _site_node_config(
    partition: int | None, data: Path | None, name: str | None, graph: Path | None
) -> dict[str, str]:
    """The node config of a site's own file (``data``, ``site``, ``graph``), checked here."""
    if (partition is None) == (data is None):
        raise ConfigError(
            "give the node's data: --data FILE (the site's own file) or --partition K "
            "(a built-in federation), one of them"
        )
    if data is None:
        if name or graph:
            raise ConfigError("--name and --graph describe a site's own file: add --data FILE")
        return {}
    for path, flag in ((data, "--data"), (graph, "--graph")):
        if path is not None and not path.exists():
            raise ConfigError(f"{flag} {path} does not exist; give the path of this site's file")
    from fedstruct.data.sites import site_name

    config = {"data": str(data.resolve()), "site": name or site_name(data)}
    if graph is not None:
        config["graph"] = str(graph.resolve())
    return config


ReplaceKeys = Annotated[
    bool,
    typer.Option("--overwrite", help="Replace files that exist (see docs/deploy.md first)."),
]
SuperlinkAddress = Annotated[str, typer.Option("--superlink", help="The SuperLink's host:port.")]
RootCertificates = Annotated[Path | None, typer.Option(help="CA certificate of the TLS SuperLink.")]
ControlKey = Annotated[Path | None, typer.Option(help="Private control key the SuperLink accepts.")]


def _control_link(
    superlink: str, root_certificates: Path | None, control_key: Path | None
) -> tuple[Any, Path | None]:
    """The SuperLink to call and the control key that signs (checked: one-line errors)."""
    from fedstruct.fl.flower.cluster import Link
    from fedstruct.fl.flower.credentials import load_control_key

    if control_key is not None:
        load_control_key(control_key)
    return Link(superlink, root_certificates), control_key


@flower_app.command("register")
@_bad_input_exits_2
def flower_register(
    public_key: Annotated[Path, typer.Argument(help="A SuperNode's public key (NAME.pub).")],
    superlink: SuperlinkAddress = "127.0.0.1:9091",
    root_certificates: RootCertificates = None,
    control_key: ControlKey = None,
) -> None:
    """Admit a SuperNode: register its public key at a SuperLink started with --node-auth."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from fedstruct.files import read_bytes
    from fedstruct.fl.flower.control import register_node

    data = read_bytes(public_key, "public key", limit=1024 * 1024)
    try:
        loaded = serialization.load_ssh_public_key(data.strip())
    except (ValueError, TypeError):
        loaded = None
    if not isinstance(loaded, ec.EllipticCurvePublicKey):
        raise ConfigError(
            f"public key {public_key} is not a SuperNode's public key (an OpenSSH ECDSA "
            "line, e.g. NAME.pub from 'fedstruct flower node-key NAME')"
        )
    link, key = _control_link(superlink, root_certificates, control_key)
    node_id = register_node(link, key, data.strip())
    out_console.print(f"registered {public_key.name}: SuperNode id {node_id}")


@flower_app.command("unregister")
@_bad_input_exits_2
def flower_unregister(
    node_id: Annotated[int, typer.Argument(help="The SuperNode id 'register' printed.")],
    superlink: SuperlinkAddress = "127.0.0.1:9091",
    root_certificates: RootCertificates = None,
    control_key: ControlKey = None,
) -> None:
    """Revoke a SuperNode's key: the SuperLink refuses the node from now on."""
    from fedstruct.fl.flower.control import unregister_node

    link, key = _control_link(superlink, root_certificates, control_key)
    unregister_node(link, key, node_id)
    out_console.print(f"unregistered SuperNode {node_id}")


@flower_app.command("certificates")
@_bad_input_exits_2
def flower_certificates(
    folder: Annotated[Path, typer.Argument(help="Where to write ca.crt, server.pem, keys.")],
    host: Annotated[
        list[str] | None,
        typer.Option(help="Host name or IP of the SuperLink (repeatable; 127.0.0.1 is added)."),
    ] = None,
    overwrite: ReplaceKeys = False,
) -> None:
    """Make a CA and the SuperLink's TLS certificate (give ca.crt to every institution).
    Existing files are kept unless --overwrite: a new CA invalidates every ca.crt handed
    out."""
    from fedstruct.fl.flower.credentials import make_certificates

    hosts = ["127.0.0.1", *[h for h in host or [] if h != "127.0.0.1"]]
    made = make_certificates(folder, hosts, overwrite=overwrite)
    out_console.print(f"wrote {made.ca_cert}, {made.server_cert} and their keys for {hosts}")


@flower_app.command("control-key")
@_bad_input_exits_2
def flower_control_key(
    path: Annotated[Path, typer.Argument(help="Private key file to write (PATH.pub is added).")],
    overwrite: ReplaceKeys = False,
) -> None:
    """Make a control key pair: PATH signs runs and registrations; PATH.pub goes into the
    SuperLink's --control-keys file. An existing pair is kept unless --overwrite."""
    from fedstruct.fl.flower.credentials import make_control_key

    private, public = make_control_key(path, overwrite=overwrite)
    out_console.print(f"wrote {private} (keep it secret) and {public} (for --control-keys)")


@flower_app.command("node-key")
@_bad_input_exits_2
def flower_node_key(
    path: Annotated[Path, typer.Argument(help="Private key file to write (PATH.pub is added).")],
    overwrite: ReplaceKeys = False,
) -> None:
    """Make a SuperNode key pair; send only PATH.pub to the SuperLink's operator. An
    existing pair is kept unless --overwrite (the new one must be registered again)."""
    from fedstruct.fl.flower.credentials import make_node_key

    private, public = make_node_key(path, overwrite=overwrite)
    out_console.print(f"wrote {private} (keep it) and {public} (register it)")


#: Above this many metrics, the screen shows those of the whole federation only.
_SHORT = 30


def _print_metrics(method: str, metrics: dict[str, float], out: Path) -> None:
    _metrics_table(f"{method}: metrics", metrics, out)
    out_console.print(f"written to [bold]{out}[/]")


def _metrics_table(title: str, metrics: dict[str, float], out: Path) -> None:
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


def main() -> None:
    """Entry point of the ``fedstruct`` script."""
    app()


if __name__ == "__main__":
    main()
