"""The node-link graph picture: marks, styles, legend, colour bar, layout (issue 20)."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.lines import Line2D
from matplotlib.patches import ArrowStyle, FancyArrowPatch

from fedstruct.data import load_network
from fedstruct.drawing.clusters import CLUSTER_FROM, graph_clusters
from fedstruct.drawing.picture import (
    EDGE_KINDS,
    draw_graph,
    edge_kind,
    graph_figure,
    graph_layout,
)
from fedstruct.errors import GraphError
from fedstruct.graphs import CIRCLE, Graph, dag_to_pag, random_dag, write_graph

#: a o-> b <-> c, c --- d, e isolated (the PAG of the brief).
SMALL = Graph.from_edges(list("abcde"), ["a o-> b", "b <-> c", "c --- d"])
#: An edge ending within this many inches of its variable's box "stops at the border".
NEAR = 3.0 / 72


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _pag60() -> Graph:
    dag = random_dag("random", 70, seed=3, edges_per_node=1.5)
    rng = np.random.default_rng(0)
    return dag_to_pag(dag, [dag.names[i] for i in rng.choice(70, 10, replace=False)])


def _edge_patches(fig) -> dict[str, FancyArrowPatch]:
    ax = fig.axes[0]
    return {p.get_gid(): p for p in ax.patches if isinstance(p, FancyArrowPatch)}


def _circle_marks(fig) -> dict[str, Line2D]:
    ax = fig.axes[0]
    return {ln.get_gid(): ln for ln in ax.lines if (ln.get_gid() or "").startswith("circle ")}


def _box_distance(point, centre, size) -> float:
    """Distance from a point to a box (0 inside)."""
    dx = max(0.0, abs(point[0] - centre[0]) - size[0] / 2)
    dy = max(0.0, abs(point[1] - centre[1]) - size[1] / 2)
    return math.hypot(dx, dy)


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def _legend_labels(fig) -> list[str]:
    legend = fig.axes[0].get_legend()
    return [t.get_text() for t in legend.get_texts()]


# ----------------------------------------------------------------- the file
def test_draw_graph_writes_a_png_that_grows_with_the_graph(tmp_path):
    small = draw_graph(SMALL, tmp_path / "sub" / "small.png", title="small PAG")
    big = draw_graph(_pag60(), tmp_path / "big.png", title="60 variables")
    small_w, small_h = _png_size(small)
    big_w, big_h = _png_size(big)
    assert 300 <= small_w <= 1000 and 250 <= small_h <= 1000
    assert 1000 <= big_w <= 4000 and 1000 <= big_h <= 4000


def test_same_graph_same_picture(tmp_path):
    graph = _pag60()
    first = draw_graph(graph, tmp_path / "a.png", title="t")
    second = draw_graph(graph, tmp_path / "b.png", title="t")
    assert first.read_bytes() == second.read_bytes()
    assert graph_layout(graph) == graph_layout(graph)


# -------------------------------------------------------------------- marks
def test_one_patch_per_edge_with_its_arrowheads():
    fig = graph_figure(SMALL, title="small")
    patches = _edge_patches(fig)
    assert sorted(patches) == ["a o-> b", "b <-> c", "c --- d"]
    assert isinstance(patches["a o-> b"].get_arrowstyle(), ArrowStyle.CurveFilledB)
    assert isinstance(patches["b <-> c"].get_arrowstyle(), ArrowStyle.CurveFilledAB)
    assert type(patches["c --- d"].get_arrowstyle()) is ArrowStyle.Curve


def test_circle_marks_exactly_at_the_circle_ends():
    fig = graph_figure(SMALL, title="small")
    layout = graph_layout(SMALL)
    circles = _circle_marks(fig)
    assert list(circles) == ["circle a a o-> b"]
    mark = circles["circle a a o-> b"]
    centre = (mark.get_xdata()[0], mark.get_ydata()[0])
    radius = (mark.get_markersize() + mark.get_markeredgewidth()) / 2 / 72
    # Just outside a's box, touching it (within the small gap), and nowhere near b.
    gap = _box_distance(centre, layout.positions["a"], layout.sizes["a"]) - radius
    assert 0 < gap < NEAR
    assert _box_distance(centre, layout.positions["b"], layout.sizes["b"]) > 0.5
    # The line starts on the circle's rim.
    start = _edge_patches(fig)["a o-> b"].get_path().vertices[0]
    assert math.dist(start, centre) == pytest.approx(radius)
    assert mark.get_markerfacecolor() in ("white", "w", (1.0, 1.0, 1.0, 1.0))


@pytest.mark.parametrize("kind", EDGE_KINDS, ids=lambda k: k.name)
def test_every_edge_type_draws_its_marks(kind):
    edge = f"x {'-<o'[[1, 2, 3].index(kind.marks[0])]}-{'->o'[[1, 2, 3].index(kind.marks[1])]} y"
    graph = Graph.from_edges(["x", "y"], [edge])
    fig = graph_figure(graph, title=kind.name)
    (patch,) = _edge_patches(fig).values()
    heads = sum(mark == 2 for mark in kind.marks)
    style = type(patch.get_arrowstyle())
    expected = {0: ArrowStyle.Curve, 1: ArrowStyle.CurveFilledB, 2: ArrowStyle.CurveFilledAB}
    assert style is expected[heads]
    assert len(_circle_marks(fig)) == sum(mark == CIRCLE for mark in kind.marks)
    assert _legend_labels(fig) == [kind.label]


def test_edge_kind_turns_edges_to_read_as_their_type():
    graph = Graph.from_edges(["a", "b"], ["a <-o b"])
    kind, drawn = edge_kind(graph.edges()[0])
    assert kind.name == "partially directed"
    assert str(drawn) == "b o-> a"


def test_edges_stop_at_the_boxes_borders():
    graph = load_network("alarm").graph
    fig = graph_figure(graph, title="alarm")
    layout = graph_layout(graph)
    patches = _edge_patches(fig)
    assert len(patches) == graph.n_edges
    for edge in graph.edges():
        # The drawn outline, arrowhead included, in data coordinates (inches).
        vertices = patches[str(edge)].get_path().vertices
        for name in (edge.a, edge.b):
            centre, size = layout.positions[name], layout.sizes[name]
            distance = min(_box_distance(v, centre, size) for v in vertices)
            assert 0 < distance < NEAR, (str(edge), name, distance)


def test_bidirected_edges_are_dashed_and_coloured_apart():
    fig = graph_figure(SMALL, title="small")
    patches = _edge_patches(fig)
    assert patches["b <-> c"].get_linestyle() in ("--", "dashed")
    assert patches["a o-> b"].get_linestyle() in ("-", "solid")
    assert patches["c --- d"].get_linestyle() in ("-", "solid")
    colours = {gid: patch.get_edgecolor() for gid, patch in patches.items()}
    assert colours["b <-> c"] != colours["a o-> b"] and colours["b <-> c"] != colours["c --- d"]
    weighted = graph_figure(SMALL, title="w", weights=np.ones((5, 5)))
    assert _edge_patches(weighted)["b <-> c"].get_linestyle() in ("--", "dashed")


# ------------------------------------------------------------------- legend
def test_legend_lists_exactly_the_edge_types_present():
    fig = graph_figure(SMALL, title="small")
    assert _legend_labels(fig) == ["↔ bidirected", "o→ partially directed", "— undirected"]
    dag = graph_figure(load_network("alarm").graph, title="alarm")
    assert _legend_labels(dag) == ["→ directed"]
    assert graph_figure(Graph.empty(["a", "b"]), title="none").axes[0].get_legend() is None


def test_legend_and_colour_bar_stay_off_the_picture():
    fig = graph_figure(_pag60(), title="pag", weights=np.ones((60, 60)))
    renderer = fig.canvas.get_renderer()
    ax, bar = fig.axes
    picture = ax.get_window_extent(renderer)
    legend = ax.get_legend().get_window_extent(renderer)
    assert legend.y1 <= picture.y0
    assert bar.get_window_extent(renderer).x0 >= picture.x1


# ------------------------------------------------------------------ weights
def test_colour_bar_iff_weights():
    assert len(graph_figure(SMALL, title="plain").axes) == 1
    weights = {("a", "b"): 0.9, ("c", "b"): 0.4, ("c", "d"): 0.4}
    fig = graph_figure(SMALL, title="weighted", weights=weights, label="vote share")
    assert len(fig.axes) == 2
    assert fig.axes[1].get_ylabel() == "vote share"
    colours = {gid: p.get_edgecolor() for gid, p in _edge_patches(fig).items()}
    assert colours["b <-> c"] == colours["c --- d"]
    assert colours["a o-> b"] != colours["c --- d"]


def test_edges_without_a_weight_are_grey_and_named_in_the_legend():
    fig = graph_figure(SMALL, title="partly", weights={("a", "b"): 1.0}, label="confidence")
    patches = _edge_patches(fig)
    assert patches["b <-> c"].get_edgecolor() == patches["c --- d"].get_edgecolor()
    assert patches["a o-> b"].get_edgecolor() != patches["c --- d"].get_edgecolor()
    assert _legend_labels(fig)[-1] == "no confidence"


@pytest.mark.parametrize(
    "weights",
    [{("a", "c"): 0.5}, {("a", "b"): float("nan")}, np.ones((3, 3))],
    ids=["not-an-edge", "not-finite", "wrong-shape"],
)
def test_bad_weights_raise_what_write_graph_raises(weights, tmp_path):
    with pytest.raises(GraphError) as written:
        write_graph(SMALL, tmp_path / "g.json", weights=weights)
    with pytest.raises(GraphError) as drawn:
        graph_figure(SMALL, title="bad", weights=weights)
    assert str(drawn.value) == str(written.value)


# ------------------------------------------------------------------- layout
def _boxes_overlap(layout) -> list[tuple[str, str]]:
    names = list(layout.positions)
    hits = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            (xa, ya), (wa, ha) = layout.positions[a], layout.sizes[a]
            (xb, yb), (wb, hb) = layout.positions[b], layout.sizes[b]
            if abs(xa - xb) < (wa + wb) / 2 and abs(ya - yb) < (ha + hb) / 2:
                hits.append((a, b))
    return hits


def test_a_dag_is_drawn_in_layers_pointing_down():
    graph = load_network("alarm").graph
    layout = graph_layout(graph)
    assert _boxes_overlap(layout) == []
    for edge in graph.edges():
        assert layout.positions[edge.b][1] < layout.positions[edge.a][1], str(edge)


def test_spring_layout_boxes_do_not_overlap():
    # Mostly nondirected: drawn by the spring layout, not in layers.
    dag = random_dag("random", 40, seed=1, edges_per_node=1.5)
    edges = [f"{e.a} o-o {e.b}" for e in dag.edges()]
    layout = graph_layout(Graph.from_edges(dag.names, edges))
    assert not layout.layered
    assert _boxes_overlap(layout) == []


def test_isolated_variables_sit_in_a_row_below_the_rest():
    layout = graph_layout(SMALL)
    assert layout.isolated == ("e",)
    (_, ye), (_, he) = layout.positions["e"], layout.sizes["e"]
    lowest = min(y - layout.sizes[n][1] / 2 for n, (_, y) in layout.positions.items() if n != "e")
    assert ye + he / 2 < lowest
    alone = graph_layout(Graph.empty([f"v{i}" for i in range(8)]))
    assert _boxes_overlap(alone) == []
    assert len(alone.isolated) == 8


def test_sixty_variables_draw(tmp_path):
    graph = _pag60()
    fig = graph_figure(graph, title="60 variables")
    assert len(_edge_patches(fig)) == graph.n_edges
    circles = sum(m == CIRCLE for e in graph.edges() for m in (e.mark_a, e.mark_b))
    assert len(_circle_marks(fig)) == circles
    assert _boxes_overlap(graph_layout(graph)) == []
    assert draw_graph(graph, tmp_path / "pag60.png", title="60 variables").stat().st_size > 0


def test_history_plots_count_rounds_and_counts_in_whole_numbers(monkeypatch, tmp_path):
    from fedstruct.drawing import plots

    kept = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: kept.append(fig) or path)
    history = [{"round": r, "concepts": 7.0, "loss": 1.0 / r} for r in range(1, 24)]
    plots.plot_history(history, ["concepts", "loss"], tmp_path / "h.png", "t")
    counts, loss = kept[0].axes
    kept[0].canvas.draw()
    for ax in (counts, loss):
        assert all(float(t).is_integer() for t in ax.get_xticks())  # rounds
    assert all(float(t).is_integer() for t in counts.get_yticks())  # a count
    assert not all(float(t).is_integer() for t in loss.get_yticks())  # a loss is not


def test_a_history_panel_can_hold_a_training_and_a_held_out_metric(monkeypatch, tmp_path):
    """issue 29, item 11: FedAvg's plot shows a held-out loss beside the training loss."""
    from fedstruct.drawing import plots

    kept = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: kept.append(fig) or path)
    history = [{"round": r, "train_loss": 1.0 / r, "test_loss": 2.0 / r} for r in range(1, 5)]
    plots.plot_history(history, [("train_loss", "test_loss"), "absent"], tmp_path / "h.png", "t")
    (loss,) = kept[0].axes
    assert loss.get_title() == "loss"
    assert [t.get_text() for t in loss.get_legend().get_texts()] == ["train loss", "test loss"]
    assert [list(line.get_ydata()) for line in loss.get_lines()] == [
        [1.0 / r for r in range(1, 5)],
        [2.0 / r for r in range(1, 5)],
    ]


def test_fedavg_s_plot_has_no_panel_of_one_point(monkeypatch, tmp_path):
    """issue 49, item 9: on files without held-out rows, the plot's "client rmse" panel
    held one point (the final federated evaluation, in metrics.json): it is left out;
    a one-round run still draws its single points."""
    from fedstruct.drawing import plots
    from fedstruct.runs.contract import execute

    kept = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: kept.append(fig) or path)
    examples = Path(__file__).resolve().parents[2] / "examples" / "diabetes"
    sites = [str(examples / f"hospital-{k}.csv") for k in (1, 2, 3, 4)]
    execute("fedavg", [{"sites": sites, "target": "progression", "rounds": 3}], tmp_path / "a")
    history = json.loads((tmp_path / "a" / "history.json").read_text())
    assert [("client_rmse" in h) for h in history] == [False, False, True]
    assert [ax.get_title() for ax in kept[0].axes] == ["train loss", "clients answered"]
    one = [{"round": 1, "train_loss": 0.5, "client_rmse": 3.0}]
    plots.plot_history(one, ["train_loss", "client_rmse"], tmp_path / "one.png", "t")
    assert [ax.get_title() for ax in kept[1].axes] == ["train loss", "client rmse"]


# ------------------------------------------------------------- large graphs
def _pag120() -> Graph:
    dag = random_dag("random", 130, seed=5, edges_per_node=1.3)
    rng = np.random.default_rng(1)
    return dag_to_pag(dag, [dag.names[i] for i in rng.choice(130, 10, replace=False)])


def test_a_large_graph_is_drawn_as_clusters_under_a_map_of_them():
    """Issue 51: above CLUSTER_FROM variables, one frame per cluster with the edges
    inside it; the edges between clusters are counted on the map's lines, not drawn."""
    graph = _pag120()
    assert graph.n_nodes > CLUSTER_FROM
    clustering = graph_clusters(graph)
    where = clustering.cluster_of()
    inside = {str(edge_kind(e)[1]) for e in graph.edges() if where[e.a] == where[e.b]}
    assert 0 < len(inside) < graph.n_edges
    fig = graph_figure(graph, title="PAG")
    ax = fig.axes[0]
    assert set(_edge_patches(fig)) == inside
    frames = [p.get_gid() for p in ax.patches if (p.get_gid() or "").startswith("frame ")]
    assert frames == [f"frame {c.label}" for c in clustering.clusters]
    links = {ln.get_gid() for ln in ax.lines if (ln.get_gid() or "").startswith("link ")}
    labels = [c.label for c in clustering.clusters]
    assert links == {f"link {labels[i]} {labels[j]}" for i, j in clustering.links}
    counts = {t.get_text() for t in ax.texts}
    assert {str(n) for n in clustering.links.values()} <= counts
    bold = {
        p.get_gid()[5:]
        for p in ax.patches
        if (p.get_gid() or "").startswith("node ") and p.get_linewidth() > 1.5
    }
    crossing = {v for e in graph.edges() if where[e.a] != where[e.b] for v in (e.a, e.b)}
    assert bold == crossing
    assert "clusters" in ax.get_title() and "bold box" in " ".join(_legend_labels(fig))


def test_each_cluster_sits_in_its_own_frame():
    graph = _pag120()
    clustering = graph_clusters(graph)
    groups = [c.names for c in clustering.clusters]
    layout = graph_layout(graph, groups, [c.title for c in clustering.clusters])
    assert _boxes_overlap(layout) == []
    boxes = [f.box for f in layout.frames]
    for k, (x0, y0, x1, y1) in enumerate(boxes):
        for name in groups[k]:
            (x, y), (w, h) = layout.positions[name], layout.sizes[name]
            assert x0 < x - w / 2 and x + w / 2 < x1 and y0 < y - h / 2 and y + h / 2 < y1
        for a0, b0, a1, b1 in boxes[k + 1 :]:
            assert a1 <= x0 or x1 <= a0 or b1 <= y0 or y1 <= b0  # frames do not overlap


def test_a_graph_at_the_threshold_is_drawn_whole():
    graph = _pag60()
    assert graph.n_nodes <= CLUSTER_FROM
    fig = graph_figure(graph, title="60")
    assert not [p for p in fig.axes[0].patches if (p.get_gid() or "").startswith("frame ")]
    assert len(_edge_patches(fig)) == graph.n_edges
