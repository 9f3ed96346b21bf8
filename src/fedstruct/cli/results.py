"""What a finished run left: ``fedstruct show``, ``predict``, ``sample``, ``query`` and
``export``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from fedstruct.errors import ConfigError, FedstructWarning

if TYPE_CHECKING:  # imported when a command runs, and then only the method it runs
    pass

from fedstruct.cli.app import (
    app,
    bad_input_exits_2,
    metrics_table,
    out_console,
)

RunFolder = Annotated[Path, typer.Argument(help="The --out folder of a fedstruct run.")]


@app.command()
@bad_input_exits_2
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
    if model.method == "fcm":
        _print_concept_metrics(folder)
    draw_graph(learned, path, title=title, weights=weights or None)
    out_console.print(f"picture: [bold]{path}[/]")


def _print_concept_metrics(folder: Path) -> None:
    """An F-CMs run's concept metrics (CAS, OIS, NIS, CaCE, intervention AUC), when
    its metrics.json has them (docs/fcm.md, "Concept metrics")."""
    from fedstruct.methods.fcm.evaluate import SUMMARY_METRICS
    from fedstruct.results.use import run_summary

    metrics = run_summary(folder).metrics
    shown = {k: metrics[k] for k in SUMMARY_METRICS if k in metrics}
    if shown:
        metrics_table("fcm: concept metrics", shown, folder)


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
        metrics_table(f"{summary.method}: metrics", summary.metrics, folder)


Overwrite = Annotated[
    bool, typer.Option("--overwrite", help="Replace --out if it exists (never an input file).")
]


@app.command()
@bad_input_exits_2
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
@bad_input_exits_2
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
@bad_input_exits_2
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
@bad_input_exits_2
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
