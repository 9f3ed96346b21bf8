"""The ``fedstruct run`` contract: settings in, ``config.json`` / ``metrics.json`` / plots out.

Every runnable method registers a :class:`Runnable` with three pieces, so that the
same run works in one process and across machines:

- ``source(settings, sites)``: the run's data, resolved once
  (:mod:`fedstruct.runs.source`): the method's protocol when ``sites`` is
  ``None``, else the user's site files as the method reads them
  (:class:`~fedstruct.runs.source.SiteFiles`: the files the settings name, a
  deployed node's own file, or a deployment server's schema-only view). Its clients
  are built when read (a SuperNode builds only its own).
- ``method(settings, source)``: the estimator, by default :func:`build_estimator`
  (``settings.estimator_params(source)``; its ``make_client`` builds a node's
  client).
- ``run(settings, ctx, model, source)``: the server side — fit on the backend
  (:meth:`RunContext.fit` hands it the source's clients on in-process backends and
  just their names on a deployment, where the server never holds client data) and
  compute metrics and plots.

:func:`execute` resolves the settings, writes ``DIR/config.json`` before the run (so
``--resume DIR`` can continue it), runs, and writes ``DIR/metrics.json`` (flat: name
-> number), ``DIR/history.json`` (per-round records) and the method's plots.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from fedstruct import __version__
from fedstruct.constraints import Interval, OneOf, check_fields
from fedstruct.data.formats import TABLES, SiteFormat
from fedstruct.data.partition import client_names
from fedstruct.data.schedule import Schedule
from fedstruct.data.sites import MISSING
from fedstruct.errors import CheckpointError, ConfigError
from fedstruct.fl import (
    Backend,
    Federated,
    LocalBackend,
    Participation,
)
from fedstruct.fl.bootstrap import BootstrapOptions
from fedstruct.fl.federation import CHECKPOINT_FILE, read_checkpoint_header
from fedstruct.registry import estimator_class, import_part, method_names
from fedstruct.runs.artifacts import write_artifacts
from fedstruct.runs.control import RunControl, Tracking
from fedstruct.runs.digest import settings_digest
from fedstruct.runs.folder import (
    RUN_FILE,
    folder_lock,
    lock_owner,
    prepare_out,
    read_record,
    record_status,
    reopen,
    run_state,
    update_files,
    valid_record,
    write_record,
)
from fedstruct.runs.inputs import absolute_paths, changed_input, input_digests
from fedstruct.runs.launch import Launcher, PreparedRun, make_launcher
from fedstruct.runs.outcome import RunOutcome
from fedstruct.runs.progress import ProgressFile
from fedstruct.runs.settings import SEED, apply_settings, settings_dict, subset
from fedstruct.runs.site_args import split_node_sites
from fedstruct.runs.sites import site_specs
from fedstruct.runs.source import SiteFiles, SiteView, Source, checked_clients, site_view
from fedstruct.runs.tracking import check_tracking, track_run

if TYPE_CHECKING:
    from fedstruct.estimators import FederatedEstimator

__all__ = [
    "FederationSettings",
    "RunContext",
    "RunOutcome",
    "Runnable",
    "execute",
    "prepare_out",
    "read_config",
    "read_outcome",
    "register",
    "run_resolved",
    "runnable",
    "runnable_names",
    "unfinished_run",
]


@dataclass(frozen=True)
class FederationSettings:
    """Settings every federated run shares: size, seed and participation.

    The participation settings are the fields of :class:`fedstruct.fl.Participation`
    (same names, defaults and documentation); ``late_fraction`` and ``leave_fraction``
    draw a random join/leave schedule (:meth:`fedstruct.data.Schedule.random`). A
    method's run settings inherit this class and the method's config dataclass, so
    every hyper-parameter is a flat setting. The data source (``network``,
    ``dataset``) is each method's own setting: a method that reads none rejects it.

    Parameters
    ----------
    clients
        Number of clients (institutions) in the federation.
    rounds
        Communication rounds.
    seed
        Seed of every random draw of the run (data, partition, training).
    late_fraction
        Share of the clients that join after round 1, at a random round.
    leave_fraction
        Share of the clients that leave before the last round, at a random round.
    sites
        A user's per-site files, one client each: ``PATH`` (named by the file's stem)
        or ``NAME=PATH`` (``--site``); they replace the method's built-in data.
    manifest
        A federation manifest (YAML/JSON) listing each site's file and options (``--sites``).
    truth
        A graph file (graph.json, DOT, GraphML, BIF) to score a learned graph against.
    missing
        Missing values in a site's file: ``error`` (name the column and count),
        ``drop-rows`` (drop those rows; the counts per site go to metrics.json) or
        ``keep`` (for a method that uses incomplete rows: FedAvg imputes them, FedCDnv
        deletes them test-wise); empty: the manifest's choice, else the method's
        default (``keep`` for FedAvg and FedCDnv, ``error`` for the others).
    kinds
        Kind of a site column, overriding the inferred one (``--set kinds.COL=ordinal``):
        categorical, ordinal or continuous.
    node_sites
        Sites whose files stay on their own SuperNodes (``--node-site NAME``, with
        ``--backend flower``; each node started with ``fedstruct flower supernode
        --data FILE --name NAME``), in client order. ``--node-site NAME:DATASET``
        also names the data set the run uses at a node that offers several
        (``node_datasets``).
    node_datasets
        Site -> the data set the run uses at its node (``--node-site SITE:DATASET``,
        or ``--set node_datasets.SITE=DATASET``); a site left out uses its node's only
        data set (``fedstruct flower catalogue`` lists what each node offers).
    min_site_rows
        The fewest rows a site's file may hold (its schema, which leaves the site,
        would give its rows away); empty: the manifest's, else 10.
    max_site_levels
        The most levels a site may report for one categorical or ordinal column
        (every level name leaves the site; a column with a distinct value in 90 % of
        the rows is refused as an identifier); empty: the manifest's, else 100.
    bootstrap
        Edge confidence: after the run, run the federation this many more times, each
        site resampling its own rows, and save each edge's frequencies and their
        consensus graph (FedCDnv and FED-CD; 0: none; at most 10,000, each a whole
        run; docs/confidence.md).
    subsample
        The share of its rows each site draws, without replacement, in each of the
        bootstrap's runs; empty: a bootstrap sample (as many rows, with replacement).
    correct_duplicates
        A bootstrap sample's rows count half a row each in the CI tests (its repeated
        rows would otherwise count as new evidence; docs/confidence.md); false: the
        plain bootstrap. Ignored with ``subsample``.
    jobs
        Processes running the bootstrap's runs; empty: the cores available.
    secure_aggregation
        Sum the clients' replies that the server needs only as sums by secure
        aggregation (SecAgg+), so that the server never sees one site's reply
        (``--secure-aggregation``; docs/privacy.md); a method whose server needs the
        replies one by one refuses it.
    """

    #: The method whose estimator these settings build (its registered name:
    #: :func:`fedstruct.registry.estimator_class`, imported when a run builds it).
    method_name: ClassVar[str] = ""
    #: Why ``--bootstrap`` makes no sense for the method ("" where it does).
    bootstrap_refusal: ClassVar[str] = "the method learns no graph whose edges could be counted"
    #: Settings of the built-in data besides :meth:`check_one_source`'s that a run on
    #: the sites' files leaves unused (config.json's ``unused_settings``).
    unused_on_files: ClassVar[tuple[str, ...]] = ()
    #: Why the method refuses ``--secure-aggregation`` ("" where it takes it).
    secure_aggregation_refusal: ClassVar[str] = (
        "not supported yet for this method (its exchanges are not wired to the secure sum; "
        "fedavg takes it)"
    )

    clients: int = 4
    rounds: int = 20
    seed: int = 0
    sample_rate: float = 1.0
    min_clients: int = 1
    dropout: float = 0.0
    straggler_rate: float = 0.0
    straggler_slowdown: float = 4.0
    deadline: float | None = None
    report_rate: float = 1.0
    always_report: float = 0.0
    late_fraction: float = 0.0
    leave_fraction: float = 0.0
    sites: tuple[str, ...] = ()
    manifest: str | None = None
    truth: str | None = None
    missing: str | None = None
    kinds: dict[str, str] = field(default_factory=dict)
    node_sites: tuple[str, ...] = ()
    node_datasets: dict[str, str] = field(default_factory=dict)
    min_site_rows: int | None = None
    max_site_levels: int | None = None
    bootstrap: int = 0
    subsample: float | None = None
    correct_duplicates: bool = True
    jobs: int | None = None
    secure_aggregation: bool = False

    def __post_init__(self) -> None:
        check_fields(self, _FEDERATION_CONSTRAINTS, "")
        if self.bootstrap_options().replicates and self.bootstrap_refusal:
            raise ConfigError(f"--bootstrap {self.bootstrap}: {self.bootstrap_refusal}; drop it")
        if self.secure_aggregation and self.secure_aggregation_refusal:
            raise ConfigError(f"--secure-aggregation: {self.secure_aggregation_refusal}; drop it")
        if sum(map(bool, (self.sites, self.manifest, self.node_sites))) > 1:
            raise ConfigError(
                "give the sites by one of --site, --sites MANIFEST or --node-site, not several"
            )
        if self.truth and not self.from_files:
            raise ConfigError(
                f"--truth {self.truth} scores a graph learned from your own sites' files "
                "(--site/--sites); a run on built-in data is scored against the data's own "
                "graph: drop --truth"
            )
        sites, datasets = split_node_sites(self.node_sites, self.node_datasets)
        object.__setattr__(self, "node_sites", sites)  # SITE:DATASET -> SITE, node_datasets
        object.__setattr__(self, "node_datasets", datasets)
        if len(set(self.node_sites)) != len(self.node_sites):
            raise ConfigError(f"--node-site names a site twice: {list(self.node_sites)}")
        default_clients = type(self).__dataclass_fields__["clients"].default
        if self.from_files and self.clients != default_clients:
            raise ConfigError(
                "--clients is the number of sites when --site/--sites give the data; drop it"
            )
        # Run settings also inherit a method's config dataclass: validate it too.
        method_check = getattr(super(), "__post_init__", None)
        if method_check is not None:
            method_check()
        self.participation(())  # validate the participation settings now, not mid-run

    def check_one_source(self, *names: str) -> None:
        """The built-in data settings ``names`` (e.g. ``network``) keep their defaults
        when the sites' files give the data.

        Raises
        ------
        ConfigError
            If one of them is set as well as ``--site``/``--sites``.
        """
        object.__setattr__(self, "_built_in_data", names)  # for unused_settings
        fields = type(self).__dataclass_fields__
        for name in names:
            if self.from_files and getattr(self, name) != fields[name].default:
                raise ConfigError(
                    f"--{name.replace('_', '-')} and --site/--sites both name the data; give one"
                )

    def unused_settings(self) -> list[str]:
        """The settings that play no part in this run, which config.json names
        (``unused_settings``) beside their defaults: with the sites' files giving the
        data, ``clients`` (the sites are the clients) and the built-in data's settings
        (:meth:`check_one_source`'s names, e.g. ``network``, ``samples``, and
        :attr:`unused_on_files`)."""
        if not self.from_files:
            return []
        return ["clients", *getattr(self, "_built_in_data", ()), *self.unused_on_files]

    @property
    def from_files(self) -> bool:
        """Whether the data come from a user's per-site files (``sites``, ``manifest``
        or ``node_sites``)."""
        return bool(self.sites or self.manifest or self.node_sites)

    def client_names(self) -> list[str]:
        """The clients' names: the sites' names, or ``client-1 .. client-K``."""
        if self.node_sites:
            return list(self.node_sites)
        if self.from_files:
            return [spec.name for spec in site_specs(self)]
        return client_names(self.clients)

    def participation(self, names: Sequence[str]) -> Participation:
        """The participation model for clients ``names``."""
        schedule = Schedule.random(
            names, self.rounds, self.late_fraction, self.leave_fraction, self.seed
        )
        return subset(self, Participation, schedule=schedule)

    def bootstrap_options(self) -> BootstrapOptions:
        """The bootstrap settings (``bootstrap``, ``subsample``, ``correct_duplicates``,
        ``jobs``) as one checked :class:`~fedstruct.fl.bootstrap.BootstrapOptions`.

        Raises
        ------
        ConfigError
            Naming the first setting out of its range.
        """
        return BootstrapOptions.of(self)

    def estimator_class(self) -> type[Any]:
        """The estimator these settings build (:attr:`method_name`'s)."""
        return estimator_class(self.method_name)

    def estimator_params(self, source: Any) -> dict[str, Any]:
        """The estimator's constructor arguments for the run's :class:`Source`: every
        setting named like one of the estimator's parameters (its explicit signature,
        ``BaseEstimator._get_param_names``), the bootstrap's as
        :meth:`BootstrapOptions.params <fedstruct.fl.bootstrap.BootstrapOptions.params>`
        gives them (``bootstrap = 0`` as ``None``: no replicate). A method's settings
        add what the source decides (its target, levels, kinds; the participation model
        over its clients): :func:`build_estimator` builds the estimator from them."""
        names = set(self.estimator_class()._get_param_names())
        params = {
            f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name in names
        }
        if "bootstrap" in params:
            params.update(self.bootstrap_options().params())
        return params


_FEDERATION_CONSTRAINTS = {
    "clients": Interval(int, 1),
    "rounds": Interval(int, 1),
    "seed": SEED,
    "missing": OneOf(MISSING, allow_none=True),
    "min_site_rows": Interval(int, 1, allow_none=True),
    "max_site_levels": Interval(int, 1, allow_none=True),
}


@dataclass(frozen=True)
class RunContext:
    """Where and how a run executes (not part of its settings): its folder, how it is
    driven (:class:`~fedstruct.runs.control.RunControl`) and its backend."""

    out: Path
    control: RunControl = field(default_factory=RunControl)
    backend: Backend = field(default_factory=LocalBackend)
    #: The estimators :meth:`fit` fitted, in order (the last one's graphs are saved).
    fitted: list[FederatedEstimator] = field(default_factory=list)

    @property
    def checkpoint(self) -> Path:
        """The run's checkpoint file."""
        return self.out / CHECKPOINT_FILE

    def fit(
        self, model: FederatedEstimator, data: Source | Sequence[Any], **extra: Any
    ) -> FederatedEstimator:
        """``model.fit(clients, **extra)`` on this context's backend, with its checkpoint,
        its control's resume, progress and stop-after, and the run's progress file
        rewritten after every round (:mod:`~fedstruct.runs.progress`; every method's
        run fits this way).

        ``data`` is the run's :class:`~fedstruct.runs.source.Source` (its
        clients on a backend that runs them here, their names on a deployment, whose
        server holds no client data) or the clients themselves.
        """
        if isinstance(data, Source):
            if self.backend.needs_client_data:
                clients: Sequence[Any] = checked_clients(data)
            else:
                clients = list(data.names)
        else:
            clients = data
        self.fitted.append(model)
        update_files(self.out)  # what the run wrote before its rounds (knowledge.json)
        return model.fit(
            clients,
            backend=self.backend,
            checkpoint=self.checkpoint,
            resume=self.control.resume,
            progress=self.control.progress,
            stop_after=self.control.stop_after,
            on_round=ProgressFile(self.out),
            **extra,
        )


def build_estimator(settings: FederationSettings, source: Source) -> Federated:
    """The estimator ``settings`` describe for ``source``:
    ``settings.estimator_class()(**settings.estimator_params(source))``, every
    method's ``Runnable.method``."""
    estimator: Federated = settings.estimator_class()(**settings.estimator_params(source))
    return estimator


@dataclass(frozen=True)
class Runnable:
    """A method that ``fedstruct run`` can execute (see the module docstring)."""

    name: str
    summary: str
    settings: type
    #: ``source(settings, sites)``: the run's data (:mod:`fedstruct.runs.source`)
    #: from the user's site ``sites``, or the method's protocol when ``sites`` is ``None``.
    source: Callable[[Any, SiteFiles | None], Source]
    #: ``run(settings, ctx, model, source)``: fit on ``ctx`` and score.
    run: Callable[[Any, RunContext, Any, Any], RunOutcome]
    #: ``method(settings, source)``: the estimator (:func:`build_estimator`: the
    #: settings' ``estimator_params(source)``).
    method: Callable[[Any, Any], Federated] = build_estimator
    #: Settings of a small run that finishes in seconds (backend-equivalence tests).
    quick: Mapping[str, Any] = field(default_factory=dict)
    #: The method's own ``fedstruct run`` options: flag (without ``--``) -> setting name,
    #: besides ``--clients``, ``--rounds`` and ``--seed``, which every method has.
    options: Mapping[str, str] = field(default_factory=dict)
    #: ``roles(settings, given)``: the column roles every site's file is read with
    #: (``regime``, ``supervised``; :func:`fedstruct.data.read_federation`), from the
    #: settings over the manifest's options ``given``.
    roles: Callable[[Any, Mapping[str, Any]], dict[str, Any]] = field(
        default=lambda settings, given: {}
    )
    #: How the method's site files take part in a deployment's schema handshake.
    site_format: SiteFormat[Any] = TABLES
    #: The ways of treating missing values in site files
    #: (:data:`~fedstruct.data.sites.MISSING`) the method takes; the first is its
    #: default when neither the settings nor the manifest choose (FedAvg and FedCDnv:
    #: ``keep``; they impute them or delete them test-wise).
    missing: tuple[str, ...] = ("error", "drop-rows")

    def client_names(self, settings: Any) -> list[str]:
        """The clients' names: the sites' names, or ``client-1 .. client-K``."""
        return settings.client_names()

    def resolve(self, settings: Any, view: SiteView | None = None) -> Source:
        """The run's data: the method's source over the site files of ``view``, by
        default those the settings name (:func:`~fedstruct.runs.source.site_view`;
        none: the method's protocol)."""
        view = view if view is not None else site_view(settings)
        return self.source(settings, None if view is None else self.site_files(settings, view))

    def site_files(self, settings: Any, view: SiteView) -> SiteFiles:
        """The files of ``view`` as this method reads them (its site format and roles,
        missing values as :meth:`missing_mode` says)."""
        options = dataclasses.replace(view.options, missing=self.missing_mode(view))
        view = dataclasses.replace(view, options=options)
        return SiteFiles(view, self.site_format, self.roles(settings, view.roles))

    def missing_mode(self, view: SiteView) -> str:
        """How the files of ``view`` treat missing values: the settings' choice, else
        the manifest's, else the method's default (the first of :attr:`missing`).

        Raises
        ------
        ConfigError
            If the method cannot take the mode chosen (e.g. ``keep`` for a method that
            does not use incomplete rows).
        """
        mode = view.options.missing or view.roles.get("missing") or self.missing[0]
        if mode not in self.missing:
            raise ConfigError(
                f"{self.name} cannot read missing values with missing={mode}; use one of "
                f"{', '.join(self.missing)} (--set missing=...)"
            )
        return str(mode)


_REGISTRY: dict[str, Runnable] = {}


def register(entry: Runnable) -> Runnable:
    """Add a runnable method (a method's run module registers its own on import)."""
    _REGISTRY[entry.name] = entry
    return entry


def runnable_names() -> tuple[str, ...]:
    """Names accepted by ``fedstruct run`` (found without importing any method:
    :func:`fedstruct.registry.method_names`)."""
    return tuple(sorted({*method_names("run"), *_REGISTRY}))


def runnable(name: str) -> Runnable:
    """The runnable method called ``name``, its run module imported if needed (only
    that method's: :mod:`fedstruct.registry`).

    Raises
    ------
    ConfigError
        For an unknown name (listing the valid ones), or a run module that does not
        register ``name``.
    """
    if name not in _REGISTRY:
        module = import_part(name, "run").__name__
        if name not in _REGISTRY:
            raise ConfigError(
                f"method {name!r}: its run module {module!r} registered no runnable "
                f"{name!r}; it must call fedstruct.runs.contract.register(Runnable("
                f"name={name!r}, ...)) when imported"
            )
    return _REGISTRY[name]


def execute(
    name: str,
    layers: Sequence[Mapping[str, Any]],
    out: Path,
    *,
    resume: bool = False,
    progress: bool = False,
    backend: str | Launcher = "local",
    stop_after: int | None = None,
    overwrite: bool = False,
    reuse: bool = False,
    track: Tracking | None = None,
) -> RunOutcome:
    """Run method ``name`` with settings layers applied over its defaults (``resume``,
    ``progress``, ``stop_after``, ``overwrite``, ``reuse`` and ``track`` are one
    :class:`~fedstruct.runs.control.RunControl`, checked here and passed on
    as one).

    Writes ``out/config.json`` first, then hands the run to the launcher ``backend``
    chooses (:mod:`fedstruct.runs.launch`): it runs here on a backend's grid
    (``local``, ``flower-sim``) or submits it elsewhere (``flower``: a SuperLink; give
    a launcher made by :func:`~fedstruct.runs.launch.make_launcher` to pass its
    options), holding the folder's lock (:mod:`fedstruct.runs.folder`)
    throughout. A folder holding another run is refused unless ``overwrite``, which
    deletes only the files ``run.json`` says that run wrote; the folder of a run that
    failed before saving a round is reused.
    The files the settings name are recorded by absolute paths in ``config.json``
    and the SHA-256 of their content in ``run.json``
    (:mod:`~fedstruct.runs.inputs`).
    With ``resume=True`` the settings, backend and launcher options come from
    ``out/config.json`` and the run continues from its checkpoint, if its input files
    are those it began with; entries added to the folder since it last wrote it are
    not the run's (:func:`~fedstruct.runs.folder.reopen`). With
    ``stop_after=r`` the run stops after round ``r`` (its checkpoint can be resumed
    later). With ``reuse=True`` (a recipe's runs) a folder that holds this very run
    (the same settings digest) is picked up where it stopped: a finished run's
    outcome is read back from its files (:func:`read_outcome`), and a run that was
    interrupted or stopped after saving a round resumes from its checkpoint (one
    stopped before its first round is run afresh, replacing only its own files); any
    other folder is treated as without ``reuse``. With ``track`` the run is logged to
    MLflow or TensorBoard as well (:mod:`~fedstruct.runs.tracking`: the extra is
    imported and the store reached before anything is written).

    Raises
    ------
    ConfigError
        For an unknown method, setting or backend, a ``stop_after`` below 1, a tracking
        extra that is not installed or a tracking URI out of reach, a resume
        folder without a valid ``config.json`` of this method and ``run.json``, or whose
        input files changed since it began, an ``out`` holding another run
        (without ``overwrite``) or anything else, an ``out`` another live process is
        writing (its lock), or an ``out`` that cannot be written.
    """
    control = RunControl(resume, progress, stop_after, overwrite, reuse, track)
    entry = runnable(name)
    launcher = make_launcher(backend) if isinstance(backend, str) else backend
    return _execute(entry, layers, out, launcher, control)


def _execute(
    entry: Runnable,
    layers: Sequence[Mapping[str, Any]],
    out: Path,
    launcher: Launcher,
    control: RunControl,
) -> RunOutcome:
    """:func:`execute` of ``entry``, its run control checked and its launcher made."""
    name = entry.name
    resume = control.resume
    if resume:
        saved = read_config(out)
        if saved["method"] != name:
            raise ConfigError(
                f"{out / 'config.json'} is a {saved['method']!r} run, not {name!r}; "
                f"resume it with 'fedstruct run {saved['method']} --resume {out}'"
            )
        layers = [saved["settings"]]
        launcher = _resumed_launcher(launcher, saved, out)
    settings = apply_settings(entry.settings(), *layers, method=name)
    if not resume:
        settings = absolute_paths(settings)
    unused = settings.unused_settings()
    config: dict[str, Any] = {
        "method": name,
        "settings": settings_dict(settings),
        **({"unused_settings": unused} if unused else {}),
        "backend": launcher.name,
        "fedstruct_version": __version__,
    }
    launcher.check(settings)
    config.update(launcher.record())
    digest = _settings_digest(config)
    inputs = {} if resume else input_digests(settings)  # a resume checks the recorded ones
    if control.reuse and not resume:
        earlier = _same_run_state(out, digest, inputs)
        if earlier == "finished":
            return read_outcome(out)
        if earlier is not None:  # resumable: from its checkpoint; restartable: afresh
            again = dataclasses.replace(
                control,
                resume=earlier == "resumable",
                overwrite=earlier == "restartable",
                reuse=False,
            )
            return _execute(entry, layers, out, launcher, again)
    if control.track is not None:
        check_tracking(control.track, out)  # before the folder is written
    with folder_lock(out):
        if resume:
            _check_resumable(out, digest, settings, checkpoint=launcher.checkpoint_here)
            reopen(out)
        else:
            kept = prepare_out(out, overwrite=control.overwrite)
            write_record(out, "running", kept=kept, settings_digest=digest, inputs=inputs)
        _write_json(out / "config.json", config)
        try:
            with track_run(control.track, out, config) as tracked:
                return tracked(
                    launcher.launch(
                        PreparedRun(
                            name,
                            settings,
                            out,
                            control,
                            here=lambda on: run_resolved(entry, settings, out, on, control),
                        )
                    )
                )
        except Exception as exc:
            _record_failure(out, exc)
            raise
        finally:
            update_files(out)


def _record_failure(out: Path, exc: Exception) -> None:
    """Record as failed a run that ended in ``exc`` while ``run.json`` still says
    running: a launcher's own failure, e.g. a submission the SuperLink never took
    (a run that ran here recorded its end itself), so that the same command can be
    given again once the cause is fixed."""
    record = read_record(out)
    if record is not None and record["status"] == "running":
        write_record(out, "failed", error=f"{type(exc).__name__}: {exc}")


def _resumed_launcher(given: Launcher, saved: Mapping[str, Any], out: Path) -> Launcher:
    """The launcher of a resumed run: the one its ``config.json`` names (``given`` if it
    names none), with the options it records.

    Raises
    ------
    ConfigError
        If it names no backend or launcher, or records options the launcher refuses.
    """
    name = saved.get("backend", given.name)
    launcher = given if name == given.name else make_launcher(name)
    return launcher.resumed(saved, out)


def _settings_digest(config: Mapping[str, Any]) -> str:
    """The :func:`~fedstruct.runs.digest.settings_digest` of a ``config.json``'s method,
    settings and backend."""
    return settings_digest(config["method"], config["settings"], config.get("backend"))


def _same_run_state(out: Path, digest: str, inputs: Mapping[str, str]) -> str | None:
    """How the run in ``out`` ended if it is the run whose settings digest is
    ``digest`` on the inputs whose digests are ``inputs``: ``finished``, ``resumable``
    (interrupted or stopped, with a checkpoint) or ``restartable`` (interrupted or
    stopped before its first checkpoint: only its own files are replaced); ``None`` for
    anything else (no run, another run, a failed one)."""
    record = valid_record(out)
    if record is None or record.get("settings_digest") != digest:
        return None
    if record.get("inputs", {}) != inputs:
        return None
    state = record_status(out, record)
    if state == "finished" and (out / "metrics.json").is_file():
        return "finished"
    if state in ("interrupted", "stopped"):
        return "resumable" if (out / CHECKPOINT_FILE).is_file() else "restartable"
    return None


def read_outcome(out: Path) -> RunOutcome:
    """The outcome of the finished run in ``out``, from its ``metrics.json``,
    ``history.json`` and the figures ``run.json`` lists (JSON only; no model: load it
    with :func:`fedstruct.load`).

    Raises
    ------
    ConfigError
        If ``metrics.json`` or ``history.json`` is not valid JSON of the right shape.
    """
    metrics = _read_json(out / "metrics.json")
    history = _read_json(out / "history.json") if (out / "history.json").is_file() else []
    if not isinstance(metrics, dict) or not isinstance(history, list):
        raise ConfigError(
            f"{out}: metrics.json must hold an object and history.json a list, as "
            "'fedstruct run' writes them; rerun into a new folder"
        )
    record = read_record(out) or {}
    figures = [out / name for name in record.get("figures", []) if (out / name).is_file()]
    return RunOutcome(metrics, history, figures)


def _read_json(path: Path, fix: str = "rerun into a new folder") -> Any:
    """A JSON file a run wrote; a one-line ConfigError (ending with ``fix``) if it is
    unreadable."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); {fix}") from None


def _check_resumable(out: Path, digest: str, settings: Any, *, checkpoint: bool) -> None:
    """``out`` holds a run this fedstruct recorded (``run.json``), started with the
    settings whose digest is ``digest`` (those of ``config.json`` now, resolved as
    ``settings``) on input files whose content has not changed since
    (:mod:`~fedstruct.runs.inputs`), and, with ``checkpoint``, a checkpoint
    it reads (its header only: the state is read and checked against the run's
    configuration when the run starts).

    Raises
    ------
    CheckpointError
        If the checkpoint is missing, an old pickle (never opened), or not a fedstruct
        checkpoint of a version this fedstruct reads.
    ConfigError
        If ``run.json`` is missing, not a record of this fedstruct, or records other
        settings than ``config.json`` holds (the file was changed since the run began),
        or an input file changed or cannot be read.
    """
    if checkpoint:
        read_checkpoint_header(out / CHECKPOINT_FILE)
    record = read_record(out)
    if record is None:
        raise ConfigError(
            f"{out} has no {RUN_FILE}: --resume needs the folder of a run started by "
            "'fedstruct run'"
        )
    started = record.get("settings_digest")
    if started is not None and started != digest:
        raise ConfigError(
            f"{out / 'config.json'} holds other settings than the run began with, so its "
            "checkpoint does not belong to them; restore the file or start a new run"
        )
    changed = changed_input(record.get("inputs", {}), settings)
    if changed is not None:
        raise ConfigError(
            f"--resume {out}: {changed}; restore it, or start a new run in another folder"
        )


def run_resolved(
    entry: Runnable,
    settings: Any,
    out: Path,
    backend: Backend,
    control: RunControl | None = None,
    view: SiteView | None = None,
) -> RunOutcome:
    """Run resolved ``settings`` on ``backend`` here, driven as ``control`` says (by
    default: every round, afresh, quietly), and write metrics, history and plots.

    The run's data are resolved once (:meth:`Runnable.resolve`, over ``view``: the
    deployment ServerApp passes its :func:`~fedstruct.runs.source.server_view`),
    and ``--truth`` is read and checked before round 1. The deployment ServerApp calls
    this directly with the backend built around its Flower grid (``config.json`` was
    written by the submitting side) and the ``resume`` and ``stop_after`` its run
    config gives.
    """
    control = control or RunControl()
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    write_record(out, "running")
    try:
        source = entry.resolve(settings, view)
        _ = source.truth  # read and checked against the data before round 1
        ctx = RunContext(out, control, backend)
        outcome = entry.run(settings, ctx, entry.method(settings, source), source)
        _check_flat(entry.name, outcome.metrics)
        _write_json(out / "metrics.json", outcome.metrics)
        _write_json(out / "history.json", outcome.history)
        update_files(out)  # the plots
        artifacts = (
            write_artifacts(ctx.fitted[-1], out, data=source.inputs())
            if ctx.fitted and control.stop_after is None
            else []
        )
    except BaseException as exc:
        write_record(
            out,
            "stopped" if isinstance(exc, KeyboardInterrupt) else "failed",
            error=f"{type(exc).__name__}: {exc}",
            seconds=round(time.perf_counter() - started, 3),
        )
        raise
    write_record(
        out,
        "finished" if control.stop_after is None else "stopped",
        seconds=round(time.perf_counter() - started, 3),
        figures=[p.name for p in outcome.figures],
        artifacts=artifacts,
    )
    if ctx.fitted:
        outcome.model = ctx.fitted[-1]
    outcome.kinds = source.column_kinds()
    return outcome


def read_config(out: Path) -> dict[str, Any]:
    """Read ``out/config.json``: an object with the run's ``method`` (a string) and
    ``settings`` (an object), as :func:`execute` writes it.

    Raises
    ------
    ConfigError
        If it is missing, unreadable, or not such an object.
    """
    path = out / "config.json"
    if not path.is_file():
        raise ConfigError(f"{path} does not exist; --resume needs the folder of an earlier run")
    not_ours = "it is not a run's config.json as fedstruct writes it"
    config = _read_json(path, fix=not_ours)
    problem = _config_problem(config)
    if problem:
        raise ConfigError(f"{path} {problem}; {not_ours}")
    return config


def unfinished_run(out: Path) -> str | None:
    """One line on a run in ``out`` that has not finished (stopped, failed, still
    running, or interrupted: recorded as running but held by no live process);
    ``None`` for a finished run or a folder without a valid ``run.json``."""
    state = run_state(out)
    if state is None or state == "finished":
        return None
    try:
        method = read_config(out)["method"]
    except ConfigError:
        method = "METHOD"
    resume = f"continue it with 'fedstruct run {method} --resume {out}'"
    try:
        done = f" after round {read_checkpoint_header(out / CHECKPOINT_FILE)['round']}"
    except CheckpointError:
        done = " before any round was saved"
        resume = "nothing to resume: start the run again with --overwrite"
    if state == "running":
        owner = lock_owner(out) or {}
        who = f"process {owner.get('pid')} on {owner.get('host')}"
        return f"{out}: a {method} run, still running ({who})"
    if state == "interrupted":
        return (
            f"{out}: a {method} run, interrupted{done} (run.json says running, but no live "
            f"process holds the folder's lock); {resume}"
        )
    if state == "stopped":
        return f"{out}: a {method} run, stopped{done}; {resume}"
    error = (read_record(out) or {}).get("error", "")
    return f"{out}: a {method} run that failed{done}: {error}"


def _config_problem(config: Any) -> str:
    """What is wrong with a ``config.json``'s content (empty: nothing)."""
    if not isinstance(config, dict):
        return f"holds a JSON {type(config).__name__}, not an object"
    if not isinstance(config.get("method"), str):
        return "names no method"
    if not isinstance(config.get("settings"), dict):
        return "has no settings object"
    if not isinstance(config.get("backend", ""), str):
        return "names no backend"
    return ""


def _check_flat(name: str, metrics: Mapping[str, Any]) -> None:
    for key, value in metrics.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name}: metric {key!r} is not a number: {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise TypeError(f"{name}: metric {key!r} is not finite: {value!r}")


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
