"""``fedstruct run METHOD``: one command per registered method, built from its settings;
the options of every launcher (``--backend``) mounted as each launcher declares them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import typer
from rich.markup import escape
from typer.core import TyperGroup

from fedstruct.errors import ConfigError, FedstructError
from fedstruct.runs.control import TRACKERS

if TYPE_CHECKING:  # imported when a command runs, and then only the method it runs
    from fedstruct.runs.contract import Runnable
    from fedstruct.runs.settings import SettingInfo

from fedstruct.cli.app import (
    app,
    bad_input_exits_2,
    err_console,
    listed_names,
    out_console,
    print_metrics,
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
    click.Option(["--track"], type=click.Choice(TRACKERS),
                 help="Also log the settings, each round's numbers, the final metrics and "
                 "the files to MLflow or TensorBoard (pip install \"fedstruct[track]\")."),
    click.Option(["--track-uri"], metavar="URI",
                 help="--track mlflow: the tracking URI [default: $MLFLOW_TRACKING_URI, else "
                 "sqlite:///mlflow.db here]; --track tensorboard: the events' folder "
                 "[default: DIR/tensorboard]."),
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
    launcher_flags = launcher_click_options()
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

    @bad_input_exits_2
    def callback(**given: Any) -> None:
        settings = {name: given.pop(name) for name in flags.values()}
        chosen = {k: v for k, v in settings.items() if v is not None and v != ()}
        launcher = {option.name: given.pop(option.name) for option in launcher_flags}
        _run_method(entry.name, chosen, launcher, **given)

    return _SettingsCommand(
        entry.name,
        callback=callback,
        params=[*setting_options, *RUN_OPTIONS, *launcher_flags],
        help=entry.summary,
        settings=list(infos.values()),
        no_args_is_help=False,
    )


def launcher_click_options() -> list[click.Option]:
    """Every launcher's own options (:func:`fedstruct.runs.launch.launcher_options`),
    as the launcher declares them; each option's help names its ``--backend``."""
    from fedstruct.runs.launch import launcher_options

    types: dict[str, click.ParamType] = {
        "str": click.STRING,
        "int": click.INT,
        "float": click.FLOAT,
        "path": click.Path(path_type=Path),
    }
    return [
        click.Option(
            [f"--{option.flag}", option.name],
            type=types[option.kind],
            default=option.default,
            show_default=option.default is not None,
            help=f"--backend {backend}: {option.help}",
        )
        for backend, options in launcher_options().items()
        for option in options
    ]


def _run_method(
    method: str,
    options: dict[str, Any],
    launcher_given: dict[str, Any],
    *,
    out: Path | None,
    overwrite: bool,
    config_file: Path | None,
    assignments: Sequence[str],
    backend: str,
    resume: Path | None,
    stop_after: int | None,
    quiet: bool,
    track: str | None,
    track_uri: str | None,
) -> None:
    """What ``fedstruct run METHOD ...`` does once its options are parsed
    (``launcher_given``: the launchers' own options, by name)."""
    from fedstruct.runs.contract import execute
    from fedstruct.runs.control import Tracking
    from fedstruct.runs.launch import make_launcher
    from fedstruct.runs.settings import load_config_file, parse_assignments

    if track_uri is not None and track is None:
        raise ConfigError("--track-uri says where --track logs the run: add --track mlflow "
                          "or --track tensorboard")  # fmt: skip
    tracking = None if track is None else Tracking(track, track_uri)

    if resume is not None:
        given = options or config_file or assignments or overwrite
        if given or (out is not None and out != resume):
            raise ConfigError(
                "--resume takes every setting from the run's config.json; give no other settings"
            )
        with _stop_message(resume):
            outcome = execute(
                method,
                [],
                resume,
                resume=True,
                progress=not quiet,
                stop_after=stop_after,
                track=tracking,
            )
        print_metrics(method, outcome.metrics, resume)
        _print_kinds(outcome.kinds)
        _print_tracked(outcome.tracked)
        return
    if out is None:
        raise ConfigError("--out DIR is required: the folder for config.json, metrics.json, plots")
    layers = [
        load_config_file(config_file) if config_file else {},
        options,
        parse_assignments(assignments),
    ]
    launcher = make_launcher(backend, launcher_given)
    with _stop_message(out):
        outcome = execute(
            method,
            layers,
            out,
            progress=not quiet,
            backend=launcher,
            stop_after=stop_after,
            overwrite=overwrite,
            track=tracking,
        )
    print_metrics(method, outcome.metrics, out)
    _print_kinds(outcome.kinds)
    _print_tracked(outcome.tracked)


def _print_tracked(where: str) -> None:
    """Where ``--track`` logged the run (nothing without it)."""
    if where:
        out_console.print(f"tracked: {escape(where)}", highlight=False, soft_wrap=True)


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
                f"{kind} columns ({len(columns)}): {listed_names(columns)}",
                highlight=False,
                soft_wrap=True,
            )
