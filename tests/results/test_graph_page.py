"""`fedstruct show DIR --html PAGE`: one self-contained page to read a large graph (issue 51).

The page is checked in a real headless browser (Debian's ``chromium``; ``.ci/run``
installs it where it is missing): it loads with no script error, a search finds a
variable, and the neighbourhood it draws has the variables and edges that a breadth-
first search in Python over the same filtered edges finds.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from urllib.parse import quote

import networkx as nx
import numpy as np
import pytest
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.drawing.clusters import CLUSTER_FROM, graph_clusters
from fedstruct.graphs import ARROW, Edge, Graph, dag_to_pag, random_dag
from fedstruct.graphs.frequencies import EdgeFrequencies
from fedstruct.results.graph_page import (
    CYTOSCAPE_VERSION,
    MARK_MEANINGS,
    page_data,
    render_page,
    write_graph_page,
)
from fedstruct.runs.contract import execute

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "src" / "fedstruct" / "results" / "page_assets"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_browser = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium here (.ci/run installs Debian's package)"
)

#: a o-> b, c <-o b (read b o-> c), c <-> d, d o-o e, f isolated.
SMALL = Graph.from_edges(list("abcdef"), ["a o-> b", "c <-o b", "c <-> d", "d o-o e"])


def _frequencies(graph: Graph) -> EdgeFrequencies:
    """Four replicate graphs: the graph, it without c <-> d, and twice with a --> b."""
    edges = [str(e) for e in graph.edges()]
    without = [e for e in edges if e != "c <-> d"]
    directed = ["a --> b" if e == "a o-> b" else e for e in edges]
    replicates = [graph, Graph.from_edges(graph.names, without)]
    replicates += [Graph.from_edges(graph.names, directed)] * 2
    return EdgeFrequencies.of(replicates, graph.names)


def _site_graphs() -> dict[str, Graph]:
    """Site 1 holds a, b, c (a and b adjacent); site 2 holds b, c, d, e (none adjacent)."""
    return {
        "one": Graph.from_edges(list("abc"), ["a --> b"]),
        "two": Graph.from_edges(list("bcde"), []),
    }


def _embedded(page: str) -> dict:
    found = re.search(r'<script type="application/json" id="graph-data">(.*?)</script>', page)
    assert found is not None
    return json.loads(found.group(1))


# -------------------------------------------------------------- the page's data
def test_each_edge_is_read_as_the_picture_reads_it_with_its_numbers():
    data = page_data(SMALL, title="t", frequencies=_frequencies(SMALL), site_graphs=_site_graphs())
    names = data["names"]
    rows = {(names[e["a"]], e["m"], names[e["b"]]): e for e in data["edges"]}
    assert set(rows) == {("a", "o->", "b"), ("b", "o->", "c"), ("c", "<->", "d"),
                         ("d", "o-o", "e")}  # fmt: skip
    ab, cd = rows[("a", "o->", "b")], rows[("c", "<->", "d")]
    assert ab["f"] == 1.0 and ab["p"] == {"o->": 0.5, "-->": 0.5}
    assert cd["f"] == 0.75 and cd["p"] == {"<->": 0.75}
    assert ab["s"] == [1, 1]  # site one holds a and b, and has them adjacent
    assert rows[("b", "o->", "c")]["s"] == [0, 2]
    assert cd["s"] == [0, 1] and rows[("d", "o-o", "e")]["s"] == [0, 1]
    assert all(e["w"] is None for e in data["edges"])  # frequencies, not weights
    assert [k["token"] for k in data["kinds"]] == ["<->", "o->", "o-o"]
    assert data["kinds"][0]["meaning"] == MARK_MEANINGS["<->"]
    assert data["replicates"] == 4 and data["sites"] == 2 and data["clusters"] == []


def test_names_with_spaces_and_marks_in_them_keep_their_edges_marks():
    graph = Graph.from_edges(["a b", "c o-> d"], [Edge("a b", "c o-> d", ARROW, ARROW)])
    (edge,) = page_data(graph, title="t")["edges"]
    assert edge["m"] == "<->"


def test_without_frequencies_the_method_s_weights_are_offered():
    weights = {("a", "b"): 0.25, ("b", "c"): 0.75}
    data = page_data(SMALL, title="t", weights=weights)
    got = {(data["names"][e["a"]], data["names"][e["b"]]): e["w"] for e in data["edges"]}
    assert got == {("a", "b"): 0.25, ("b", "c"): 0.75, ("c", "d"): None, ("d", "e"): None}
    assert data["weights"] is True and data["replicates"] is None and data["sites"] == 0


def test_the_legend_reads_a_bidirected_edge_as_fci_can_claim_it():
    bidirected = MARK_MEANINGS["<->"]
    assert "no causal relation in either direction is asserted" in bidirected
    assert "hidden common cause" in bidirected and "finite-sample" in bidirected
    assert set(MARK_MEANINGS) == {"-->", "<->", "o->", "o-o", "o--", "---"}


def test_the_page_is_one_file_that_fetches_nothing(tmp_path):
    hostile = "</script><script>alert(1)</script>"
    graph = Graph.from_edges([hostile, "<!--x", "b"], [f"{hostile} o-> b", "<!--x <-> b"])
    page = render_page(page_data(graph, title=f"{hostile} & more"))
    assert page.count("<script") == page.count("</script>") == 4
    assert "alert(1)</script>" not in page.replace(html.escape(hostile), "")
    assert _embedded(page)["names"] == [hostile, "<!--x", "b"]
    outside = re.sub(r"<script\b.*?</script>", "", page, flags=re.S)
    assert not re.search(r"\b(src|href)\s*=|<link\b|@import|url\(", outside, re.I)
    assert f"Cytoscape.js {CYTOSCAPE_VERSION}" in page
    written = write_graph_page(graph, tmp_path / "p.html", title="t")
    assert _embedded(written.read_text(encoding="utf-8"))["names"][0] == hostile


def test_the_bundled_library_is_pinned_licensed_and_packaged():
    library = (ASSETS / "cytoscape" / "cytoscape.min.js").read_bytes()
    readme = (ASSETS / "cytoscape" / "README.md").read_text()
    assert hashlib.sha256(library).hexdigest() in readme
    assert f"**{CYTOSCAPE_VERSION}**" in readme
    license_text = (ASSETS / "cytoscape" / "LICENSE").read_text()
    assert "The Cytoscape Consortium" in license_text and "Permission is hereby granted" in (
        license_text
    )
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["fedstruct"]
    assert {"results/page_assets/*", "results/page_assets/cytoscape/*"} <= set(package_data)


def test_the_sites_own_graphs_come_from_the_methods_unless_aggregated_securely():
    from fedstruct.methods.fedcd import FedCD
    from fedstruct.methods.fedcdnv import FedCDnv

    mine, last = Graph.from_edges(list("ab"), ["a --> b"]), Graph.from_edges(list("ab"), [])
    vote = FedCDnv(strategy="vote").prepare()  # as a fit does
    vote.local_graphs_ = {"s1": mine}
    assert vote.site_graphs() == {"s1": mine}
    secure = FedCDnv(strategy="vote", secure_aggregation=True).prepare()
    secure.local_graphs_ = {"s1": mine}
    assert secure.site_graphs() == {}
    fedcd = FedCD().prepare()
    fedcd.client_graphs_ = [{"s1": mine}, {"s1": last}]  # the last round's
    assert fedcd.site_graphs() == {"s1": last}
    assert FedCD().site_graphs() == {}  # not fitted


# ----------------------------------------------------------------- the command
@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A FedCDnv run with 3 sites and a 3-run bootstrap (frequencies and site graphs)."""
    out = tmp_path_factory.mktemp("page") / "run"
    settings = {"network": "sachs", "clients": 3, "reference": False, "max_samples": 300,
                "bootstrap": 3, "jobs": 1}  # fmt: skip
    execute("fedcdnv", [settings], out)
    return out


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_show_html_writes_the_run_s_graph_with_its_frequencies_and_sites(run, tmp_path):
    from fedstruct.fl.artifact import load

    code, out = invoke("show", str(run), "--html", str(tmp_path / "g.html"))
    assert code == 0, out
    data = _embedded((tmp_path / "g.html").read_text(encoding="utf-8"))
    model = load(run)
    assert data["names"] == list(model.graph_.names) and len(data["edges"]) == model.graph_.n_edges
    assert data["replicates"] == 3 and data["sites"] == 3
    frequency = model.edge_frequencies_.adjacency_matrix()
    for e in data["edges"]:
        assert e["f"] == pytest.approx(frequency[e["a"], e["b"]])
    assert data["title"].startswith("fedcdnv: graph (")


def test_show_html_refuses_to_overwrite_or_to_write_where_it_should_not(run, tmp_path):
    page = tmp_path / "g.html"
    page.write_text("mine")
    code, out = invoke("show", str(run), "--html", str(page))
    assert code == 2 and "exists" in out and "--overwrite" in out
    assert len(out.strip().splitlines()) == 1 and page.read_text() == "mine"
    code, _ = invoke("show", str(run), "--html", str(page), "--overwrite")
    assert code == 0 and page.read_text().startswith("<!DOCTYPE html>")
    code, out = invoke("show", str(run), "--html", str(tmp_path / "no" / "g.html"))
    assert code == 2 and "does not exist" in out and not (tmp_path / "no").exists()
    before = (run / "graph.json").read_bytes()
    code, out = invoke("show", str(run), "--html", str(run / "graph.json"), "--overwrite")
    assert code == 2 and "a file of the run" in out
    assert (run / "graph.json").read_bytes() == before
    code, out = invoke("show", str(run), "--html", str(tmp_path))
    assert code == 2 and "is a folder" in out


# -------------------------------------------------------------- in a browser
def page_state(page: Path, fragment: str, scratch: Path) -> dict:
    """The state the page writes into #page-state, read from chromium's --dump-dom."""
    url = page.resolve().as_uri() + ("#" + fragment if fragment else "")
    profile = scratch / "chromium-profile"
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-extensions", f"--user-data-dir={profile}", "--virtual-time-budget=10000",
         "--dump-dom", url],
        capture_output=True, text=True, timeout=180,
        env={"HOME": str(scratch), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    found = re.search(r'<pre id="page-state">(.*?)</pre>', done.stdout, re.S)
    assert found is not None, done.stderr[-2000:]
    state = json.loads(html.unescape(found.group(1)))
    assert state["ready"] is True and state["errors"] == state["warnings"] == [], state
    state["dom"] = done.stdout
    return state


#: More passing edges than this within the rings of a neighbourhood are left out.
RING_EDGES = 400


def expected(
    data: dict, centre: str, depth: int, rings: bool = False, **least
) -> tuple[set[str], int]:
    """The variables within ``depth`` of ``centre`` over the edges that pass the filters,
    and the passing edges drawn among them (all, or without those between variables at
    the same distance when there are more than RING_EDGES and ``rings`` is not asked
    for): a breadth-first search in Python."""
    marks = least.get("marks")
    names = data["names"]
    kept = nx.Graph()
    kept.add_nodes_from(range(len(names)))
    for e in data["edges"]:
        share = None if e["s"] is None else e["s"][0] / e["s"][1]
        if marks is not None and e["m"] not in marks:
            continue
        if any(least.get(key, 0) > 0 and (value is None or value < least[key] - 1e-9)
               for key, value in (("minfreq", e["f"]), ("minagree", share))):  # fmt: skip
            continue
        kept.add_edge(e["a"], e["b"])
    reached = nx.single_source_shortest_path_length(kept, names.index(centre), cutoff=depth)
    among = list(kept.subgraph(reached).edges())
    chords = [(a, b) for a, b in among if reached[a] == reached[b]]
    drawn = len(among) - (len(chords) if len(chords) > RING_EDGES and not rings else 0)
    return {names[i] for i in reached}, drawn


def _rich_pag() -> tuple[Graph, EdgeFrequencies, dict[str, Graph]]:
    """A 130-variable PAG (10 latent of 140), deterministic frequencies and two sites."""
    dag = random_dag("random", 140, seed=5, edges_per_node=1.3)
    rng = np.random.default_rng(1)
    pag = dag_to_pag(dag, [dag.names[i] for i in rng.choice(140, 10, replace=False)])
    edges = [str(e) for e in pag.edges()]
    replicates = [Graph.from_edges(pag.names, edges[: len(edges) - 5 * k]) for k in range(4)]
    half = len(pag.names) // 2
    sites = {"one": pag.restrict(pag.names[: half + 20]), "two": pag.restrict(pag.names[half:])}
    return pag, EdgeFrequencies.of(replicates, pag.names), sites


@needs_browser
def test_a_run_s_page_loads_and_a_search_draws_the_neighbourhood(run, tmp_path):
    page = tmp_path / "run.html"
    assert invoke("show", str(run), "--html", str(page))[0] == 0
    data = _embedded(page.read_text(encoding="utf-8"))
    overview = page_state(page, "", tmp_path)
    assert overview["view"] == "whole" and overview["nodes"] == len(data["names"])
    assert overview["edges"] == len(data["edges"])
    legend = re.search(r'<dl class="marks" id="meanings">(.*?)</dl>', overview["dom"], re.S)
    assert legend is not None
    for kind in data["kinds"]:  # each mark present, with what it claims
        assert html.escape(kind["meaning"], quote=False) in legend.group(1)
    degree = np.bincount([i for e in data["edges"] for i in (e["a"], e["b"])])
    centre = data["names"][int(np.argmax(degree))]
    state = page_state(page, f"search={quote(centre)}&depth=1", tmp_path)
    nodes, edges = expected(data, centre, 1)
    assert state["view"] == "neighbourhood" and state["selected"] == centre
    assert (state["nodes"], state["edges"]) == (len(nodes), edges) and edges > 0


@needs_browser
def test_filters_clusters_and_partial_names_on_a_large_page(tmp_path):
    pag, frequencies, sites = _rich_pag()
    assert pag.n_nodes > CLUSTER_FROM
    page = write_graph_page(
        pag, tmp_path / "pag.html", title="PAG", frequencies=frequencies, site_graphs=sites
    )
    data = _embedded(page.read_text(encoding="utf-8"))
    clustering = graph_clusters(pag)
    overview = page_state(page, "", tmp_path)
    assert overview["view"] == "clusters" and overview["nodes"] == len(clustering.clusters)
    assert overview["edges"] == len(clustering.links)
    second = page_state(page, "cluster=C2", tmp_path)
    assert (second["view"], second["cluster"]) == ("cluster", "C2")
    assert (second["nodes"], second["edges"]) == (
        len(clustering.clusters[1].names),
        clustering.inside[1],
    )
    hub = clustering.clusters[0].hub
    marks = quote("o->,<->", safe="")
    fragment = f"search={hub.lower()}&depth=2&marks={marks}&minfreq=0.6&minagree=0.5"
    state = page_state(page, fragment, tmp_path)  # a name in any case is found
    nodes, edges = expected(data, hub, 2, marks={"o->", "<->"}, minfreq=0.6, minagree=0.5)
    assert state["selected"] == hub and (state["nodes"], state["edges"]) == (len(nodes), edges)
    unfiltered = expected(data, hub, 2)
    assert (len(nodes), edges) != (len(unfiltered[0]), unfiltered[1])  # the filters bit
    several = page_state(page, "search=9", tmp_path)  # part of X9, X19, X90, ...
    assert several["selected"] is None and "X9" in several["matches"]
    assert len(several["matches"]) > 1 and several["view"] == "clusters"


@needs_browser
def test_a_dense_ring_of_neighbours_is_drawn_on_request(tmp_path):
    """A hub whose 40 neighbours are all adjacent: the 780 edges among them are left out
    (the 40 from the hub drawn) until asked for (``rings=1``, or the status line's button)."""
    ring = [f"n{i}" for i in range(40)]
    edges = [f"hub o-> {n}" for n in ring]
    edges += [f"{a} <-> {b}" for i, a in enumerate(ring) for b in ring[i + 1 :]]
    page = write_graph_page(Graph.from_edges(["hub", *ring], edges), tmp_path / "d.html",
                            title="dense")  # fmt: skip
    data = _embedded(page.read_text(encoding="utf-8"))
    state = page_state(page, "search=hub&depth=1", tmp_path)
    assert (state["nodes"], state["edges"], state["left_out"]) == (41, 40, 780)
    assert expected(data, "hub", 1) == ({"hub", *ring}, 40)
    asked = page_state(page, "search=hub&depth=1&rings=1", tmp_path)
    assert (asked["edges"], asked["left_out"]) == (820, 0)
    assert expected(data, "hub", 1, rings=True)[1] == 820
