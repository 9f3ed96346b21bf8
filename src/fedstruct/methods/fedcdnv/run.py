"""``fedstruct run fedcdnv``: FedCDnv and its baselines on the paper's data settings (§4.1).

Data sources (``--network``):

- ``synthetic``: an Erdős–Rényi DAG with ``nodes`` variables and random discrete
  conditionals (``cardinality`` states, Dirichlet(``dirichlet``) rows);
- a bundled network (child, insurance, alarm, barley, child3, alarm3, ...);
- ``sachs-cytometry``: the real Sachs et al. (2005) flow-cytometry data, discretised.

A share ``latent_ratio`` (λ) of the variables is hidden from every client (absolute
latent variables; default 0.15, and 0 for the real data), every client observes a
share ``overlap`` (δ) of the rest, and holds ``n_k`` rows, ``n_k`` uniform in
``[min_samples, max_samples]``. The ground truth is the PAG over the integrated
observed variables. With ``reference`` the run also scores centralised FCI on the
pooled data (all integrated variables, the clients' total sample size).

For the real Sachs data without latent variables the truth is the consensus DAG
itself: its PAG is all ``o-o`` (it has no unshielded collider), so orientations are
scored against the DAG's arrowheads there (``*_arrowhead`` metrics).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import cast

from fedstruct.data import ClientData
from fedstruct.discovery import fci, make_ci_test
from fedstruct.drawing.plots import plot_graph_comparison
from fedstruct.errors import FedstructWarning
from fedstruct.graphs import Graph
from fedstruct.graphs.metrics import edge_scores, edge_type_counts, site_agreement
from fedstruct.methods.fedcdnv import FedCDnv, graph_scores
from fedstruct.methods.fedcdnv.settings import FedCDnvRun
from fedstruct.methods.fedcdnv.sources import VariableSubsetTask
from fedstruct.runs.confidence import bootstrap_metrics
from fedstruct.runs.contract import RunContext, RunOutcome
from fedstruct.runs.knowledge import save_knowledge
from fedstruct.runs.sites import aligned
from fedstruct.runs.source import SiteFiles

__all__ = [
    "central_reference",
    "run_fedcdnv",
    "score",
    "site_scores",
    "test_metrics",
    "warn_sites_ahead",
]


def score(truth: Graph, fed: Graph, definite: Sequence[tuple[str, str]] = ()) -> dict[str, float]:
    """Edge and orientation precision/recall/F1 (both conventions), SHD and the FDRs of
    the returned causal / non-causal relationships, and of the definite ones (Table 2):
    :func:`~fedstruct.methods.fedcdnv.graph_scores`, what ``FedCDnv.evaluate`` gives."""
    return graph_scores(truth, fed, definite)


def central_reference(
    s: FedCDnvRun, clients: Sequence[ClientData], source: VariableSubsetTask
) -> Graph:
    """Centralised FCI on pooled data: the clients' total size over all of ``O``."""
    rows = source.reference_rows(sum(c.n_rows for c in clients), seed=s.seed + 1)
    rows = rows.loc[:, rows.nunique() > 1]  # a constant column relates to nothing
    ci = make_ci_test(
        rows, s.ci_test, small_sample=s.small_sample, dof=s.dof, cg_min_rows=s.cg_min_rows
    )
    graph = fci(ci, alpha=s.alpha, depth=s.depth, pds_depth=s.pds_depth, workers=s.workers).graph
    return graph.expand(source.truth.names)


def run_fedcdnv(
    s: FedCDnvRun, ctx: RunContext, model: FedCDnv, source: VariableSubsetTask | SiteFiles
) -> RunOutcome:
    """Fit on the backend; score FedG (and FeddG's definite pairs) against the true PAG,
    or, on a user's files, report what FedG holds (:func:`_on_files`). A knowledge
    file is checked against the federation's variables first and saved as
    knowledge.json."""
    save_knowledge(s.knowledge, source.graph_variables(), ctx.out)
    ctx.fit(model, source)
    if model.graph_ is None:  # stopped after round 1 (--stop-after 1): nothing integrated
        tests = float(sum(h.get("tests", 0.0) for h in model.history_))
        return RunOutcome({"tests": tests}, list(model.history_))
    causal, noncausal = model.definite_pairs_
    if source.sites is not None:
        return _on_files(s, ctx, model, [*causal, *noncausal], source.sites)
    task = cast(VariableSubsetTask, source)  # the paper's federation
    truth = task.truth
    # A variable constant at every client that observes it reaches no graph: isolated.
    fed = model.graph_.expand(truth.names)
    metrics = score(truth, fed, [*causal, *noncausal])
    metrics["n_definite"] = float(len(causal) + len(noncausal))
    metrics["n_variables"] = float(len(model.names_))
    metrics["tests"] = float(sum(h.get("tests", 0.0) for h in model.history_))
    metrics.update(_site_metrics(model, truth, fed, warn=False))
    metrics.update(_bootstrap_metrics(model, truth))
    if s.reference and ctx.backend.needs_client_data:  # a deployment's server has none
        central = central_reference(s, task.clients(), task)
        for key, value in score(truth, central).items():
            metrics[f"central_{key}"] = value
    figure = plot_graph_comparison(
        truth,
        fed,
        ctx.out / "fedcdnv_graph.png",
        title=f"{s.strategy} on {s.network}: {s.clients} clients",
    )
    history = [dict(h) for h in model.history_]
    return RunOutcome(metrics, history, [figure])


def test_metrics(site_tests: Mapping[str, Mapping[str, float | str]]) -> dict[str, float]:
    """What each site's CI tests were, for metrics.json: ``ci_test_<name>`` (how many
    sites ran that test, e.g. ``ci_test_cg``) and ``ci_test_<name>_<site>`` (1: the
    test that site ran; ``"auto"`` decides per site, on its own rows), and per site
    the fewest and the median
    rows behind a test (``test_rows_min_<site>``, ``test_rows_median_<site>``: below
    the site's rows when values are missing, deleted test-wise) and the tests skipped
    for too few rows (``skipped_tests_<site>``)."""
    out: dict[str, float] = {}
    for site, entry in site_tests.items():
        name = entry.get("ci_test")
        if name is not None:
            key = f"ci_test_{name}"
            out[key] = out.get(key, 0.0) + 1.0
            out[f"{key}_{site}"] = 1.0
        for field_name, metric in (
            ("rows_min", "test_rows_min"),
            ("rows_median", "test_rows_median"),
            ("skipped", "skipped_tests"),
        ):
            if field_name in entry:
                out[f"{metric}_{site}"] = float(entry[field_name])
    return out


def warn_skipped(site_tests: Mapping[str, Mapping[str, float | str]]) -> None:
    """A :class:`~fedstruct.errors.FedstructWarning` for each site whose every CI test
    was skipped (too few rows complete on the tests' variables): its graph is then the
    complete graph, not evidence."""
    for site, entry in site_tests.items():
        total, skipped = entry.get("total", 0.0), entry.get("skipped", 0.0)
        if total and skipped == total:
            warnings.warn(
                f"site {site!r}: all {int(total)} CI tests were skipped for too few rows "
                f"complete on their variables (fewest {entry.get('rows_min', 0):g}), so its "
                "graph keeps every edge; fill in missing values, drop mostly-empty columns "
                "from its file, or add rows",
                FedstructWarning,
                stacklevel=2,
            )


def _on_files(
    s: FedCDnvRun,
    ctx: RunContext,
    model: FedCDnv,
    definite: Sequence[tuple[str, str]],
    source: SiteFiles,
) -> RunOutcome:
    """A run on a user's files: what FedG holds, how far the sites' own PAGs agree with
    it, and, with ``--truth``, the scores against that graph."""
    metrics = {
        **edge_type_counts(model.graph_),
        "n_definite": float(len(definite)),
        "n_variables": float(len(model.names_)),
        "tests": float(sum(h.get("tests", 0.0) for h in model.history_)),
        # with secure aggregation the sites' own PAGs are never seen
        **(
            {"site_agreement": site_agreement(model.graph_, model.local_graphs_.values())}
            if model.secure_aggregation_ is None
            else {}
        ),
        **source.report(),
        **test_metrics(model.site_tests_),
    }
    warn_skipped(model.site_tests_)
    figures = []
    truth = source.truth
    if truth is not None:
        truth, fed = aligned(truth, model.graph_)
        metrics.update(score(truth, fed, definite))
        metrics.update(_site_metrics(model, truth, fed))
        figures.append(
            plot_graph_comparison(
                truth, fed, ctx.out / "fedcdnv_graph.png", title=f"{s.strategy} on your sites"
            )
        )
    metrics.update(_bootstrap_metrics(model, truth))
    return RunOutcome(metrics, [dict(h) for h in model.history_], figures)


def site_scores(truth: Graph, fed: Graph, local: Mapping[str, Graph]) -> dict[str, float]:
    """Each site's own PAG beside the federation's, on that site's variables: the
    adjacency F1 against ``truth`` of the site's PAG (``alone_f1_edge_<site>``) and of
    FedG restricted to the same variables (``federated_f1_edge_<site>``), and how many
    sites the federation trails there (``sites_ahead_of_federation``). The truth is
    restricted to the site's variables for both (variables the truth lacks are left
    out), so the two numbers compare the same pairs."""
    out: dict[str, float] = {}
    ahead = 0
    for site, own in local.items():
        names = [v for v in own.names if v in truth.names and v in fed.names]
        if len(names) < 2:
            continue
        reference = truth.restrict(names)
        alone = edge_scores(reference, own.restrict(names)).f1
        federated = edge_scores(reference, fed.restrict(names)).f1
        out[f"alone_f1_edge_{site}"] = alone
        out[f"federated_f1_edge_{site}"] = federated
        ahead += alone > federated
    if out:
        out["sites_ahead_of_federation"] = float(ahead)
    return out


def warn_sites_ahead(scores: Mapping[str, float]) -> None:
    """A :class:`~fedstruct.errors.FedstructWarning` for each site whose own PAG scores
    a higher adjacency F1 than the federation on its variables (:func:`site_scores`):
    on those pairs the merge kept the wrong side of a disagreement (docs/fedcdnv.md,
    "When a site alone beats the federation")."""
    for key, alone in scores.items():
        if not key.startswith("alone_f1_edge_"):
            continue
        site = key.removeprefix("alone_f1_edge_")
        federated = scores[f"federated_f1_edge_{site}"]
        if alone > federated:
            warnings.warn(
                f"site {site!r} alone scores adjacency F1 {alone:.3f} on its variables, the "
                f"federation {federated:.3f} on the same pairs: where the sites disagreed, "
                "the merge kept the wrong side there (other sites outvoted it, or its edges "
                "were put down to variables it lacks; docs/fedcdnv.md, 'When a site alone "
                "beats the federation')",
                FedstructWarning,
                stacklevel=2,
            )


def _site_metrics(
    model: FedCDnv, truth: Graph, fed: Graph, *, warn: bool = True
) -> dict[str, float]:
    """:func:`site_scores` (none under secure aggregation, which never shows the server
    a site's own PAG), and with ``warn`` (a run on a user's files; the paper's
    settings and their sweeps report the metrics only) :func:`warn_sites_ahead`."""
    if model.secure_aggregation_ is not None or not model.local_graphs_:
        return {}
    scores = site_scores(truth, fed, model.local_graphs_)
    if warn:
        warn_sites_ahead(scores)
    return scores


def _bootstrap_metrics(model: FedCDnv, truth: Graph | None) -> dict[str, float]:
    """With ``--bootstrap``: the edges' frequencies and the sites' contradictions of
    the consensus (:func:`~fedstruct.runs.confidence.bootstrap_metrics`)."""
    return bootstrap_metrics(
        model.graph_,
        model.edge_frequencies_,
        model.consensus_graph_,
        model.local_graphs_,
        truth,
    )
