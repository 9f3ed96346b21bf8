"""One self-contained HTML page to read a graph of hundreds of variables.

``fedstruct show DIR --html PAGE`` writes it (:func:`write_run_page`). The page holds
the graph as JSON and its own script and `Cytoscape.js <https://js.cytoscape.org>`_
(the version :data:`CYTOSCAPE_VERSION`, MIT, bundled in ``page_assets/cytoscape``
with its license) inline, so it opens from a file with no network. On it a reader
can

- search a variable (by name or part of one) and see its neighbourhood to a chosen
  depth, drawn in rings by distance, its edges listed beside the drawing;
- filter the edges by their marks, by their frequency over the bootstrap's
  resampled runs (``--bootstrap``, docs/confidence.md) and by how many of the sites
  that hold both variables have the edge in their own graph (site agreement), where
  the run stored them, or by the method's own confidence (FED-CD's beliefs);
- start from an overview: the whole graph up to :data:`CLUSTER_FROM` variables,
  above that a map of its clusters (:mod:`fedstruct.drawing.clusters`, the
  same clusters as the PNG) whose links count the edges between them; a cluster
  opens on a click;
- read what each mark claims (:data:`MARK_MEANINGS`: what FCI's PAG asserts, Zhang
  2008, AIJ 172).

The page reads an optional fragment ``#search=NAME&depth=2&marks=-->,o->&minfreq=0.5
&minagree=0.5&minweight=0.5&rings=1&cluster=C3`` and writes what it shows into
``<pre id="page-state">`` as JSON (``ready``, ``view``, ``selected``, ``cluster``,
``depth``, ``nodes``, ``edges``, ``hidden`` by the filters, ``left_out``: the edges
within the rings of a neighbourhood left out, more than 400 and ``rings`` not asked
for, ``matches``; ``errors`` and ``warnings``:
uncaught errors and what the scripts wrote to the console; ``ms``: when the first view
was laid out, and ``clock``: when each step ended, ``painted`` the first frame drawn,
in ms since the navigation began): a headless browser's ``--dump-dom`` reads it back
(tests/results/test_graph_page.py, benchmarks/graph_page.py).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping
from importlib.resources import files
from pathlib import Path
from typing import Any

from fedstruct.drawing.clusters import CLUSTER_FROM, graph_clusters
from fedstruct.drawing.picture import EDGE_KINDS, edge_kind
from fedstruct.errors import ArtifactError, ConfigError
from fedstruct.graphs import Edge, Graph
from fedstruct.graphs.frequencies import EdgeFrequencies
from fedstruct.graphs.io import Weights, edge_weights
from fedstruct.graphs.metrics import edge_site_votes

__all__ = [
    "CYTOSCAPE_VERSION",
    "MARK_MEANINGS",
    "page_data",
    "render_page",
    "write_graph_page",
    "write_run_page",
]

#: The bundled Cytoscape.js (page_assets/cytoscape/README.md says where it comes from).
CYTOSCAPE_VERSION = "3.35.0"

#: What each edge claims, read ``A mark B``, as FCI's PAG asserts it (Zhang 2008) — also
#: for a DAG (``-->``) and a CPDAG (``---``). A circle is a mark the data leave open.
MARK_MEANINGS: dict[str, str] = {
    "-->": "A is a cause of B (an ancestor: directly or through variables not in the "
    "graph), and B is not a cause of A.",
    "<->": "Neither is a cause (an ancestor) of the other: no causal relation in either "
    "direction is asserted. Their dependence comes from a hidden common cause — or from an "
    "error of the finite-sample tests (conflicting colliders on one edge also give <->).",
    "o->": "B is not a cause of A. A may cause B, a hidden common cause may link them, or "
    "both: the data do not tell which.",
    "o-o": "A and B stay dependent whatever else is held fixed; the data leave open which "
    "causes which, and whether a hidden common cause links them.",
    "o--": "B is a cause of A; the mark at A is left open.",
    "---": "A and B are adjacent; no direction is claimed (in a CPDAG: A → B or B → A, "
    "which the data cannot tell apart).",
}

_ASSETS = files("fedstruct.results") / "page_assets"
_SLOT = re.compile(r"\{\{(TITLE|CYTOSCAPE_VERSION|CYTOSCAPE|PAGE_SCRIPT|DATA)\}\}")


def _token(edge: Edge) -> str:
    """The edge's three-character marks, e.g. ``"o->"`` (whatever its variables' names)."""
    return str(Edge("A", "B", edge.mark_a, edge.mark_b)).split()[1]


def page_data(
    graph: Graph,
    *,
    title: str,
    weights: Weights | None = None,
    frequencies: EdgeFrequencies | None = None,
    site_graphs: Mapping[str, Graph] | None = None,
) -> dict[str, Any]:
    """What the page shows, as the JSON it embeds.

    Parameters
    ----------
    graph
        A DAG, CPDAG or PAG.
    title
        The page's heading.
    weights
        The method's number per edge (as :func:`fedstruct.graphs.io.write_graph`
        takes them), offered as a "confidence" filter when there are no frequencies.
    frequencies
        The bootstrap's counts (each edge's adjacency and mark-pattern frequencies).
    site_graphs
        Each site's own graph (:meth:`~fedstruct.estimators.GraphLearner.site_graphs`):
        each edge's site vote (:func:`~fedstruct.graphs.metrics.edge_site_votes`).

    Returns
    -------
    dict
        ``names``; ``edges`` (``a``, ``b``: positions in ``names``, read ``a m b`` with
        ``m`` the marks, the turned edge's as in the PNG; ``f`` adjacency frequency,
        ``p`` pattern frequencies read from ``a`` to ``b``, ``w`` the method's number,
        ``s`` ``[agree, voters]``, each ``null`` where not stored); ``kinds`` (the mark
        types present: token, name, colour, dashed, meaning); ``clusters`` and ``links``
        above :data:`CLUSTER_FROM` variables; ``replicates``, ``sites``.
    """
    index = {name: i for i, name in enumerate(graph.names)}
    numbers = edge_weights(graph, weights) if weights is not None else {}
    votes = edge_site_votes(graph, site_graphs.values()) if site_graphs else {}
    known = set(frequencies.names) if frequencies is not None else set()
    edges, present = [], set()
    for edge in graph.edges():
        kind, turned = edge_kind(edge)
        present.add(kind.name)
        a, b = turned.a, turned.b
        row: dict[str, Any] = {"a": index[a], "b": index[b], "m": _token(turned)}
        number = numbers.get((edge.a, edge.b), numbers.get((edge.b, edge.a)))
        row["w"] = None if number is None or frequencies is not None else round(number, 6)
        if frequencies is not None and a in known and b in known:
            row["f"] = round(frequencies.adjacency(a, b), 6)
            shares = frequencies.pattern_frequencies(a, b)
            row["p"] = {k: round(v, 6) for k, v in shares.items() if v > 0}
        else:
            row["f"] = row["p"] = None
        vote = votes.get((edge.a, edge.b))
        row["s"] = list(vote) if vote is not None and vote[1] > 0 else None
        edges.append(row)
    kinds = [
        {
            "token": _token(Edge("A", "B", *kind.marks)),
            "name": kind.name,
            "color": kind.color,
            "dashed": kind.linestyle == "dashed",
            "meaning": MARK_MEANINGS[_token(Edge("A", "B", *kind.marks))],
        }
        for kind in EDGE_KINDS
        if kind.name in present
    ]
    data: dict[str, Any] = {
        "title": title,
        "names": list(graph.names),
        "edges": edges,
        "kinds": kinds,
        "replicates": frequencies.replicates if frequencies is not None else None,
        "sites": len(site_graphs) if site_graphs else 0,
        "weights": bool(numbers) and frequencies is None,
        "cluster_from": CLUSTER_FROM,
        "clusters": [],
        "links": [],
    }
    if graph.n_nodes > CLUSTER_FROM:
        clustering = graph_clusters(graph)
        data["clusters"] = [
            {
                "label": c.label,
                "title": c.title,
                "hub": c.hub,
                "members": [index[n] for n in c.names],
                "inside": inside,
            }
            for c, inside in zip(clustering.clusters, clustering.inside, strict=True)
        ]
        data["links"] = [[i, j, n] for (i, j), n in clustering.links.items()]
        data["isolated"] = [index[n] for n in clustering.isolated]
    return data


def _asset(*parts: str) -> str:
    resource = _ASSETS
    for part in parts:
        resource = resource / part
    return resource.read_text(encoding="utf-8")


def _inline_script(code: str, what: str) -> str:
    """``code`` for a ``<script>`` element; refused if it could end the element early."""
    if "</script" in code.lower() or "<!--" in code:
        raise ArtifactError(f"{what} holds '</script' or '<!--' and cannot be inlined")
    return code


def render_page(data: Mapping[str, Any]) -> str:
    """The page's HTML: ``data`` (:func:`page_data`) as JSON, the page's script and
    Cytoscape.js inline; nothing is fetched when it is opened."""
    embedded = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    embedded = embedded.replace("<", "\\u003c")  # no '</script>' or '<!--' in the element
    parts = {
        "TITLE": html.escape(str(data["title"])),
        "CYTOSCAPE_VERSION": CYTOSCAPE_VERSION,
        "CYTOSCAPE": _inline_script(_asset("cytoscape", "cytoscape.min.js"), "cytoscape.min.js"),
        "PAGE_SCRIPT": _inline_script(_asset("graph_page.js"), "graph_page.js"),
        "DATA": embedded,
    }
    # One pass over the template: text put into a {{SLOT}} is never searched for slots.
    return _SLOT.sub(lambda m: parts[m.group(1)], _asset("graph_page.html"))


def check_page_path(page: Path, protected: Mapping[Path, str], *, overwrite: bool) -> None:
    """Refuse a page path that is one of ``protected`` (always), a folder, an existing
    file without ``overwrite``, or one in a folder that does not exist.

    Raises
    ------
    ConfigError
        Naming the path and what to do instead.
    """
    page = Path(page)
    for path, what in protected.items():
        if _same_file(page, path):
            raise ConfigError(f"--html {page} is {what}; write the page to another file")
    if page.is_dir():
        raise ConfigError(f"--html {page} is a folder; give the name of a file (e.g. graph.html)")
    if page.exists() and not overwrite:
        raise ConfigError(
            f"--html {page} exists; choose another file, or add --overwrite to replace it"
        )
    parent = page.parent
    if not parent.is_dir():
        raise ConfigError(
            f"--html {page}: the folder {parent} does not exist; create it or choose another"
        )


def _same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return a.samefile(b)
    except OSError:  # one of them does not exist
        return False


def write_graph_page(
    graph: Graph,
    page: Path,
    *,
    title: str,
    weights: Weights | None = None,
    frequencies: EdgeFrequencies | None = None,
    site_graphs: Mapping[str, Graph] | None = None,
) -> Path:
    """Write the page of ``graph`` (:func:`page_data`, :func:`render_page`) to ``page``.

    Raises
    ------
    ConfigError
        If the file cannot be written (the message names it).
    """
    data = page_data(
        graph, title=title, weights=weights, frequencies=frequencies, site_graphs=site_graphs
    )
    text = render_page(data)
    page = Path(page)
    try:
        page.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write --html {page} ({exc.strerror or exc})") from exc
    return page


def write_run_page(folder: Path, stem: str, page: Path, *, overwrite: bool = False) -> Path:
    """The page of the graph ``stem`` the run in ``folder`` saved, with the bootstrap's
    frequencies and the sites' own graphs where the run kept them.

    Raises
    ------
    ConfigError
        For a page path :func:`check_page_path` refuses (checked before anything is read).
    ArtifactError
        For a folder without a valid saved model, or a graph the run did not save.
    """
    from fedstruct.fl.artifact import load
    from fedstruct.runs.artifacts import graph_title
    from fedstruct.runs.saved_graphs import run_files, saved_graph

    folder = Path(folder)
    protected = {path: f"a file of the run in {folder}" for path in run_files(folder)}
    check_page_path(page, protected, overwrite=overwrite)
    model = load(folder)
    graph, weights = saved_graph(model.method, folder, stem)
    frequencies = getattr(model, "graph_frequencies", dict)().get(stem)
    site_graphs = getattr(model, "site_graphs", dict)()
    return write_graph_page(
        graph,
        page,
        title=graph_title(model.method, stem, graph),
        weights=weights or None,
        frequencies=frequencies,
        site_graphs=site_graphs,
    )
