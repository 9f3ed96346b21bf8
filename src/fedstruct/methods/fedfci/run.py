"""``fedstruct run fedfci``: pooled federated discovery on sampled sites or a user's files.

On sampled sites the graph is scored against the model's DAG: for FCI and RFCI against
its PAG (no latent variable: the PAG of the DAG itself), for PC against the DAG. With
``reference`` the same search runs once more in this process on the sites' rows pooled,
and ``pooled_agreement`` says whether the two graphs are identical (1) or not (0): the
method's promise.
"""

from __future__ import annotations

import pandas as pd

from fedstruct.discovery import fci, make_ci_test, pc, rfci
from fedstruct.drawing.plots import plot_graph_comparison
from fedstruct.graphs import Graph, dag_to_pag
from fedstruct.graphs.metrics import edge_type_counts, graph_metrics
from fedstruct.methods.fedfci import FedFCI
from fedstruct.methods.fedfci.settings import FedFCIRun
from fedstruct.methods.fedfci.sources import SampledSites
from fedstruct.runs.contract import RunContext, RunOutcome
from fedstruct.runs.knowledge import save_knowledge
from fedstruct.runs.sites import aligned
from fedstruct.runs.source import SiteFiles, Source

__all__ = ["run_fedfci", "true_graph"]


def true_graph(dag: Graph, algorithm: str) -> Graph:
    """What a search can find of ``dag`` with a perfect test: its PAG (FCI, RFCI) or,
    for PC, the DAG itself (PC's CPDAG is scored on its adjacencies and arrowheads)."""
    return dag if algorithm == "pc" else dag_to_pag(dag)


def run_fedfci(
    s: FedFCIRun, ctx: RunContext, model: FedFCI, source: SampledSites | SiteFiles
) -> RunOutcome:
    """Fit on the backend; score the graph (sampled sites, or a user's files with
    ``--truth``) and record the run's cost."""
    save_knowledge(s.knowledge, source.graph_variables(), ctx.out)
    ctx.fit(model, source)
    history = [dict(h) for h in model.history_]
    metrics: dict[str, float] = {
        "exchanges": float(model.exchanges_),
        "requests": float(sum(h.get("requests", 0.0) for h in history)),
        "excluded_constant": float(len(model.excluded_)),
        **(
            {"dp_epsilon_spent": float(model.dp_epsilon_spent_)}
            if model.dp_epsilon_spent_ is not None
            else {}
        ),
    }
    if model.graph_ is None:  # stopped before the search completed
        return RunOutcome(metrics, history)
    metrics.update(
        {
            "tests": float(model.n_tests_),
            "undecided_pairs": float(len(model.undecided_)),
            f"ci_test_{model.ci_test_}": 1.0,
            **edge_type_counts(model.graph_),
            **{f"test_{k}": float(v) for k, v in model.rows_.items()},
        }
    )
    metrics.update(model.traffic_.summary())
    figures = []
    truth = source.truth
    if truth is not None:
        # the protocol's truth is the model's DAG; a user's --truth is scored as given
        truth = true_graph(truth, s.algorithm) if source.sites is None else truth
        t, g = aligned(truth, model.graph_)
        metrics.update(graph_metrics(t, g))
        figures.append(
            plot_graph_comparison(
                t, g, ctx.out / "fedfci_graph.png", title=f"fedfci ({s.algorithm}) on {s.network}"
            )
        )
    if source.sites is None and s.reference and ctx.backend.needs_client_data:
        metrics.update(_reference(s, model, source, truth))
    metrics.update(source.report())
    return RunOutcome(metrics, history, figures)


def _reference(
    s: FedFCIRun, model: FedFCI, source: Source, truth: Graph | None
) -> dict[str, float]:
    """The same search on the sites' rows pooled here: its scores and whether it found
    the very graph the federation found."""
    pooled = pd.concat([c.rows for c in source.clients()], ignore_index=True)
    pooled = pooled.loc[:, [v for v in pooled.columns if v not in model.excluded_]]
    ci_test = make_ci_test(
        pooled,
        model.ci_test_,
        small_sample=s.small_sample,
        dof=s.dof,
        missing="testwise",
    )
    common = {"alpha": s.alpha, "depth": s.depth}
    if s.algorithm == "fci":
        graph = fci(ci_test, pds_depth=s.pds_depth, workers=1, **common).graph
    elif s.algorithm == "rfci":
        graph = rfci(ci_test, **common).graph
    else:
        graph = pc(ci_test, **common).graph
    out = {"pooled_agreement": float(graph == model.graph_)}
    if truth is not None:
        t, g = aligned(truth, graph)
        out.update({f"central_{k}": v for k, v in graph_metrics(t, g).items()})
    return out
