"""Node-link pictures of learned causal graphs, every endpoint mark drawn.

One picture style for every method's graph (fedstruct issue 20): a DAG, a CPDAG
and a PAG are drawn the same way, as labelled boxes joined by edges whose ends
show the marks of :mod:`fedstruct.graphs.graph`: an arrowhead, a small open
circle, or nothing (a tail). Edges stop at the boxes' borders, so no mark hides
under a node. This module draws with matplotlib; where the boxes and edges go
comes from :mod:`fedstruct.drawing.layout` (:func:`graph_layout` is
re-exported here).

Colours
    Without weights each edge type has its own colour; a bidirected edge is also
    dashed. With weights (as :func:`fedstruct.graphs.io.write_graph` takes them)
    edges are coloured by their number on one colour scale with a colour bar.

Large graphs
    Above :data:`~fedstruct.drawing.clusters.CLUSTER_FROM` variables one
    drawing would be a hairball: the graph is drawn as its clusters
    (:mod:`fedstruct.drawing.clusters`), each in a frame with the edges
    inside it, under a map of the clusters whose links count the edges between
    them (those edges are not drawn; a variable that has some gets a bold box).
    ``fedstruct show DIR --html PAGE`` shows the same clusters, and every edge.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np

from fedstruct.drawing.clusters import CLUSTER_FROM, Clustering, graph_clusters
from fedstruct.drawing.layout import (
    POINTS,
    GraphLayout,
    Pen,
    Point,
    bounds,
    graph_layout,
    isotonic,
)
from fedstruct.graphs import ARROW, CIRCLE, TAIL, Edge, Graph
from fedstruct.graphs.io import Weights, edge_weights

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Colormap, ListedColormap, Normalize, to_hex
from matplotlib.figure import Figure
from matplotlib.legend_handler import HandlerBase
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Patch
from matplotlib.path import Path as MplPath

__all__ = [
    "EDGE_KINDS",
    "PICTURE_FORMATS",
    "EdgeKind",
    "GraphLayout",
    "draw_graph",
    "edge_kind",
    "graph_figure",
    "graph_layout",
]

#: The formats :func:`draw_graph` writes, by the file's suffix: matplotlib's image
#: formats (``pgf`` needs LaTeX, ``raw``/``rgba`` are bare pixel buffers: left out).
PICTURE_FORMATS = ("png", "pdf", "svg", "svgz", "eps", "ps", "jpg", "jpeg", "tif", "tiff", "webp")

_DPI = 120
_MARGIN = 0.15
_END_GAP = 1.5  # points between a box's border and an edge's end
_NODE_FACE = "#f6f6f2"
_NODE_EDGE = "#3a3a3a"
_UNWEIGHTED = "#b0b0b0"
_FRAME_FACE = "#f3f6f0"
_FRAME_EDGE = "#9db38f"
_LINK = "#8c8c8c"
_LINKED_BORDER = 2.0  # points: the box of a variable with edges to other clusters
_MAP_GAP = 0.6  # inches between the cluster map and the clusters
_MAP_SPREAD = 2.0  # the cluster map's boxes, this many times as far apart as laid out


# ================================================================ edge kinds
@dataclass(frozen=True)
class EdgeKind:
    """One type of edge: its marks (first end, second end) and how it is drawn."""

    name: str
    symbol: str
    marks: tuple[int, int]
    color: str
    linestyle: str = "solid"

    @property
    def label(self) -> str:
        """The legend entry, e.g. ``"o→ partially directed"``."""
        return f"{self.symbol} {self.name}"


#: Every edge type, in legend order; an edge is drawn with its marks in this order.
EDGE_KINDS: tuple[EdgeKind, ...] = (
    EdgeKind("directed", "→", (TAIL, ARROW), "#1f4e9a"),
    EdgeKind("bidirected", "↔", (ARROW, ARROW), "#c62828", "dashed"),
    EdgeKind("partially directed", "o→", (CIRCLE, ARROW), "#2e7d32"),
    EdgeKind("nondirected", "o–o", (CIRCLE, CIRCLE), "#e07b00"),
    EdgeKind("partially undirected", "o–", (CIRCLE, TAIL), "#7b3fa0"),
    EdgeKind("undirected", "—", (TAIL, TAIL), "#5a5a5a"),
)
_KIND_BY_MARKS = {kind.marks: kind for kind in EDGE_KINDS}


def edge_kind(edge: Edge) -> tuple[EdgeKind, Edge]:
    """The edge's type and the edge turned so that its marks read as the type's."""
    kind = _KIND_BY_MARKS.get((edge.mark_a, edge.mark_b))
    if kind is not None:
        return kind, edge
    turned = Edge(edge.b, edge.a, edge.mark_b, edge.mark_a)
    return _KIND_BY_MARKS[(turned.mark_a, turned.mark_b)], turned


# ================================================================== drawing
def graph_figure(
    graph: Graph,
    *,
    title: str,
    weights: Weights | None = None,
    label: str = "confidence",
    limits: tuple[float, float] | None = None,
) -> Figure:
    """Draw ``graph`` as a node-link picture and return the (unsaved) figure.

    Parameters
    ----------
    graph
        A DAG, CPDAG or PAG.
    title
        Shown above the picture.
    weights
        Optional numbers per edge, as :func:`fedstruct.graphs.io.write_graph` takes
        them (a mapping ``(a, b) -> float`` over adjacent pairs, or an ``(n, n)``
        array over ``graph.names``). When given, edges are coloured by their number
        and a colour bar labelled ``label`` is added; otherwise each edge type has
        its own colour.
    label
        The colour bar's label.
    limits
        The colour scale's ends (e.g. ``(0, 1)`` for frequencies); default: the
        weights' range.

    Returns
    -------
    Figure
        One axes holding the picture (one :class:`~matplotlib.patches.FancyArrowPatch`
        per edge, ``gid`` the edge as ``"a o-> b"``; one open-circle marker line per
        circle mark, ``gid`` ``"circle <name> <edge>"``), its legend of the edge types
        present, and a colour bar when weights are given.

    Raises
    ------
    GraphError
        If a weight is not finite, names a pair that is not an edge, or the weight
        matrix has the wrong shape (the checks of ``write_graph``).
    """
    numbers = edge_weights(graph, weights)
    clustering = graph_clusters(graph) if graph.n_nodes > CLUSTER_FROM else None
    if clustering is None:
        layout, cluster_map = graph_layout(graph), None
        drawn_edges = graph.edges()
    else:
        layout = graph_layout(graph, [c.names for c in clustering.clusters], _captions(clustering))
        cluster_map = _ClusterMap.of(clustering, layout)
        where = clustering.cluster_of()
        drawn_edges = [e for e in graph.edges() if where[e.a] == where[e.b]]
    pen = Pen.for_nodes(graph.n_nodes)
    scale = _ColourScale.of(numbers, limits) if weights is not None else None
    typed = [edge_kind(edge) for edge in drawn_edges]
    shapes = _edge_shapes([drawn for _, drawn in typed], layout, pen)
    extra = [] if cluster_map is None else [*cluster_map.corners(), *_frame_corners(layout)]
    fig, ax = _canvas(_extent(layout, shapes, extra), colourbar=scale is not None)
    if cluster_map is not None:
        _draw_frames(ax, layout)
        cluster_map.draw(ax, layout.fontsize)
    for (kind, drawn), shape in zip(typed, shapes, strict=True):
        colour = kind.color if scale is None else scale.colour(numbers, drawn)
        _draw_edge(ax, drawn, kind, colour, shape, pen)
    linked = set() if clustering is None else _linked_variables(graph, clustering)
    for name in graph.names:
        _draw_node(ax, name, layout, border=_LINKED_BORDER if name in linked else 0.8)
    if layout.isolated and len(layout.isolated) < graph.n_nodes:
        _caption_isolated(ax, layout)
    if clustering is not None:
        between = sum(clustering.links.values())
        title = (
            f"{title}\ndrawn as {len(clustering.clusters)} clusters; the {between} edges "
            "between clusters are counted in the map at the top, not drawn"
        )
    ax.set_title(title, fontsize=max(10.0, layout.fontsize + 3), pad=8)
    present = [k for k in EDGE_KINDS if any(kind == k for kind, _ in typed)]
    unweighted = scale is not None and any(
        scale.value(numbers, drawn) is None for _, drawn in typed
    )
    _legend(
        ax,
        present,
        pen,
        weighted=label if scale is not None else None,
        unweighted=unweighted,
        clustered=clustering is not None,
    )
    if scale is not None:
        scale.colourbar(fig, ax, label, layout.fontsize)
    return fig


def draw_graph(
    graph: Graph,
    path: Path,
    *,
    title: str,
    weights: Weights | None = None,
    label: str = "confidence",
    limits: tuple[float, float] | None = None,
) -> Path:
    """Draw ``graph`` as a node-link picture (see :func:`graph_figure`) into an image
    file, in the format its suffix names (:data:`PICTURE_FORMATS`: PNG, PDF, SVG, ...).

    Returns
    -------
    Path
        The file written (its folder is made if missing).
    """
    fig = graph_figure(graph, title=title, weights=weights, label=label, limits=limits)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fig.savefig(path, dpi=_DPI, bbox_inches="tight", pad_inches=0.15)
    finally:
        plt.close(fig)
    return path


# ------------------------------------------------------------------- canvas
def _extent(
    layout: GraphLayout, shapes: Sequence[_EdgeShape], extra: Sequence[Point] = ()
) -> tuple[float, float, float, float]:
    """The data limits: every box, every edge's curve (its control points) and the
    ``extra`` points, plus margins."""
    if not layout.positions:
        return -2.0, -1.0, 2.0, 1.0
    controls = [(float(x), float(y)) for shape in shapes for x, y in shape.path.vertices]
    x0, y0, x1, y1 = bounds(layout.positions, layout.sizes, [*controls, *extra])
    width, height = max(x1 - x0, 3.5) + 2 * _MARGIN, max(y1 - y0, 1.0) + 2 * _MARGIN
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    return cx - width / 2, cy - height / 2, cx + width / 2, cy + height / 2


def _canvas(
    extent: tuple[float, float, float, float], *, colourbar: bool
) -> tuple[Figure, plt.Axes]:
    """A figure whose axes show ``extent`` at one data unit per inch."""
    x0, y0, x1, y1 = extent
    width, height = x1 - x0, y1 - y0
    left, right = 0.1, 1.1 if colourbar else 0.1
    top, bottom = 0.5, 0.1
    fig = plt.figure(figsize=(width + left + right, height + top + bottom), dpi=_DPI)
    fw, fh = fig.get_size_inches()
    ax = fig.add_axes((left / fw, bottom / fh, width / fw, height / fh))
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_aspect("equal")
    ax.set_axis_off()
    return fig, ax


def _draw_node(ax: plt.Axes, name: str, layout: GraphLayout, border: float = 0.8) -> None:
    (x, y), (w, h) = layout.positions[name], layout.sizes[name]
    radius = min(h / 2, 0.06)
    box = FancyBboxPatch(
        (x - w / 2 + radius, y - h / 2 + radius),
        w - 2 * radius,
        h - 2 * radius,
        boxstyle=f"round,pad={radius}",
        facecolor=_NODE_FACE,
        edgecolor=_NODE_EDGE,
        linewidth=border,
        zorder=3,
        gid=f"node {name}",
    )
    ax.add_patch(box)
    ax.text(
        x,
        y,
        name,
        ha="center",
        va="center_baseline",
        fontsize=layout.fontsize,
        zorder=4,
        parse_math=False,
        gid=f"label {name}",
    )


def _caption_isolated(ax: plt.Axes, layout: GraphLayout) -> None:
    first = layout.isolated[0]
    (x, y), (w, h) = layout.positions[first], layout.sizes[first]
    ax.text(
        x - w / 2,
        y + h / 2 + 0.06,
        "variables without edges",
        ha="left",
        va="bottom",
        fontsize=layout.fontsize,
        color="#707070",
        style="italic",
    )


# -------------------------------------------------------------------- edges
@dataclass(frozen=True)
class _End:
    """One end of a drawn edge: the edge's number, which end (0: ``a``, 1: ``b``), the
    variable there, and the next point along the edge."""

    edge: int
    which: int
    name: str
    toward: Point


@dataclass(frozen=True)
class _Port:
    """Where an edge leaves a box: a point just outside one side, and that side's normal."""

    point: Point
    normal: Point


def _exit_side(
    centre: Point, size: Point, toward: Point, *, vertical: bool = False
) -> tuple[str, float]:
    """The side of a box the ray from its centre toward ``toward`` leaves through.

    Returns the side (``"top"``, ``"bottom"``, ``"left"``, ``"right"``) and where the ray
    crosses it (an x for top and bottom, a y for left and right). With ``vertical``
    the ray leaves through the top or bottom however flat it is (clamped later).
    """
    dx, dy = toward[0] - centre[0], toward[1] - centre[1]
    half_w, half_h = size[0] / 2, size[1] / 2
    if (vertical and dy) or abs(dy) * half_w >= abs(dx) * half_h:
        along = centre[0] + (dx * half_h / abs(dy) if dy else 0.0)
        return ("top" if dy > 0 else "bottom"), along
    return ("right" if dx > 0 else "left"), centre[1] + dy * half_w / abs(dx)


def _spread(values: list[float], spacing: float, low: float, high: float) -> list[float]:
    """Sorted ``values`` moved as little as possible to be ``spacing`` apart within bounds."""
    m = len(values)
    clipped = np.clip(values, low, high)
    if m == 1:
        return [float(clipped[0])]
    if (m - 1) * spacing >= high - low:
        return list(np.linspace(low, high, m))
    steps = spacing * np.arange(m)
    fitted = np.asarray(isotonic(list(clipped - steps))) + steps
    fitted += max(0.0, low - fitted[0]) - max(0.0, fitted[-1] - high)
    if fitted[0] < low - 1e-9 or fitted[-1] > high + 1e-9:
        return list(np.linspace(low, high, m))
    return list(fitted)


def _ports(ends: list[_End], layout: GraphLayout, spacing: float) -> dict[tuple[int, int], _Port]:
    """Each edge end's port: where the straight ray toward its next point leaves the box,
    spread along the side so that ends sharing a side stay ``spacing`` apart."""
    gap = _END_GAP / POINTS
    groups: dict[tuple[str, str], list[tuple[float, Point, _End]]] = {}
    for end in ends:
        centre, size = layout.positions[end.name], layout.sizes[end.name]
        side, along = _exit_side(centre, size, end.toward, vertical=end.name in layout.layered)
        groups.setdefault((end.name, side), []).append((along, end.toward, end))
    ports = {}
    for (name, side), members in groups.items():
        members.sort(key=lambda m: (m[0], m[1], m[2].edge, m[2].which))
        (cx, cy), (w, h) = layout.positions[name], layout.sizes[name]
        horizontal = side in ("top", "bottom")
        half = (w if horizontal else h) / 2
        inset = min(0.05, half / 3)
        middle = cx if horizontal else cy
        places = _spread(
            [m[0] for m in members], spacing, middle - half + inset, middle + half - inset
        )
        for (_, _, end), place in zip(members, places, strict=True):
            ports[(end.edge, end.which)] = _side_port(side, place, (cx, cy), (w, h), gap)
    return ports


def _side_port(side: str, place: float, centre: Point, size: Point, gap: float) -> _Port:
    """The port ``gap`` outside ``side`` of a box, at ``place`` along that side."""
    normal = {"top": (0.0, 1.0), "bottom": (0.0, -1.0), "right": (1.0, 0.0), "left": (-1.0, 0.0)}
    nx_, ny_ = normal[side]
    if nx_ == 0.0:
        return _Port((place, centre[1] + ny_ * (size[1] / 2 + gap)), (nx_, ny_))
    return _Port((centre[0] + nx_ * (size[0] / 2 + gap), place), (nx_, ny_))


def _mark_end(port: _Port, mark: int, toward: Point, radius: float) -> tuple[Point, Point | None]:
    """Where the line ends, and the centre of the circle mark there (if the mark is one).

    A circle sits just outside the box, touching its side; the line leaves from the
    circle's rim toward the next point. An arrowhead's tip or a tail is the port itself.
    """
    if mark != CIRCLE:
        return port.point, None
    cx = port.point[0] + radius * port.normal[0]
    cy = port.point[1] + radius * port.normal[1]
    dx, dy = toward[0] - cx, toward[1] - cy
    norm = math.hypot(dx, dy) or 1.0
    return (cx + radius * dx / norm, cy + radius * dy / norm), (cx, cy)


@dataclass(frozen=True)
class _EdgeShape:
    """An edge as drawn: the points its line passes and its circle marks (by variable)."""

    points: list[Point]
    circles: dict[str, Point]

    @property
    def path(self) -> MplPath:
        """The line: straight, or a smooth curve through the points."""
        return _smooth_path(self.points)


def _edge_shapes(edges: list[Edge], layout: GraphLayout, pen: Pen) -> list[_EdgeShape]:
    """Lines and circle marks of all edges, ends spread so that marks do not pile up."""
    routes = [layout.route(e.a, e.b) for e in edges]
    ends = []
    for k, (edge, via) in enumerate(zip(edges, routes, strict=True)):
        ends.append(_End(k, 0, edge.a, via[0] if via else layout.positions[edge.b]))
        ends.append(_End(k, 1, edge.b, via[-1] if via else layout.positions[edge.a]))
    radius = pen.circle_radius / POINTS
    ports = _ports(ends, layout, spacing=(2 * pen.circle_radius + 2.0) / POINTS)
    shapes = []
    for k, (edge, via) in enumerate(zip(edges, routes, strict=True)):
        port_a, port_b = ports[(k, 0)], ports[(k, 1)]
        start, circle_a = _mark_end(port_a, edge.mark_a, via[0] if via else port_b.point, radius)
        end, circle_b = _mark_end(port_b, edge.mark_b, via[-1] if via else port_a.point, radius)
        circles = {n: c for n, c in ((edge.a, circle_a), (edge.b, circle_b)) if c is not None}
        shapes.append(_EdgeShape([start, *via, end], circles))
    return shapes


def _smooth_path(points: list[Point]) -> MplPath:
    """A straight segment, or a smooth curve through the points as cubic Béziers.

    The tangent at an inner point is along the chord of its neighbours; each
    segment's control points lie a third of the segment's length from its ends,
    so the curve does not overshoot where the points are unevenly spaced.
    """
    if len(points) == 2:
        return MplPath(points, [MplPath.MOVETO, MplPath.LINETO])
    p = np.asarray(points, dtype=float)
    chords = np.vstack([p[1] - p[0], p[2:] - p[:-2], p[-1] - p[-2]])
    tangents = chords / np.maximum(np.linalg.norm(chords, axis=1, keepdims=True), 1e-12)
    vertices, codes = [tuple(p[0])], [MplPath.MOVETO]
    for i in range(len(p) - 1):
        reach = float(np.linalg.norm(p[i + 1] - p[i])) / 3
        vertices += [
            tuple(p[i] + reach * tangents[i]),
            tuple(p[i + 1] - reach * tangents[i + 1]),
            tuple(p[i + 1]),
        ]
        codes += [MplPath.CURVE4] * 3
    return MplPath(vertices, codes)


def _arrowstyle(kind: EdgeKind) -> str:
    heads = tuple(mark == ARROW for mark in kind.marks)
    shape = {(False, True): "-|>", (True, True): "<|-|>"}.get(heads)
    return "-" if shape is None else f"{shape},head_length=0.55,head_width=0.28"


def _circle_marker(x: float, y: float, colour: str, pen: Pen, **extra: object) -> Line2D:
    return Line2D(
        [x],
        [y],
        marker="o",
        markersize=pen.circle,
        markerfacecolor="white",
        markeredgecolor=colour,
        markeredgewidth=pen.linewidth,
        linestyle="none",
        **extra,
    )


def _draw_edge(
    ax: plt.Axes, edge: Edge, kind: EdgeKind, colour: str, shape: _EdgeShape, pen: Pen
) -> None:
    arrow = FancyArrowPatch(
        path=shape.path,
        arrowstyle=_arrowstyle(kind),
        mutation_scale=pen.head,
        color=colour,
        linewidth=pen.linewidth,
        linestyle=kind.linestyle,
        shrinkA=0,
        shrinkB=0,
        zorder=1,
        gid=str(edge),
    )
    ax.add_patch(arrow)
    for name, (x, y) in shape.circles.items():
        ax.add_line(_circle_marker(x, y, colour, pen, zorder=2, gid=f"circle {name} {edge}"))


# ------------------------------------------------------------------ colours
@dataclass(frozen=True)
class _ColourScale:
    """Edge colours by number: viridis (its pale end cut off) over the numbers' range."""

    norm: Normalize
    cmap: Colormap

    @classmethod
    def of(
        cls, numbers: Mapping[tuple[str, str], float], limits: tuple[float, float] | None = None
    ) -> _ColourScale:
        """The scale over ``limits``, else over ``numbers`` (0 to 1 if there are none;
        ±0.5 around one value)."""
        values = list(limits or numbers.values()) or [0.0, 1.0]
        low, high = min(values), max(values)
        if high - low < 1e-12:
            low, high = low - 0.5, high + 0.5
        base = plt.get_cmap("viridis")
        cmap = ListedColormap(base(np.linspace(0.0, 0.88, 256)), name="fedstruct_edges")
        return cls(Normalize(vmin=low, vmax=high), cmap)

    @staticmethod
    def value(numbers: Mapping[tuple[str, str], float], edge: Edge) -> float | None:
        """The edge's number, whichever way round its pair is keyed."""
        return numbers.get((edge.a, edge.b), numbers.get((edge.b, edge.a)))

    def colour(self, numbers: Mapping[tuple[str, str], float], edge: Edge) -> str:
        """The edge's colour on the scale; grey if it has no number."""
        value = self.value(numbers, edge)
        if value is None:
            return _UNWEIGHTED
        return to_hex(self.cmap(self.norm(value)))

    def colourbar(self, fig: Figure, ax: plt.Axes, label: str, fontsize: float) -> None:
        """A colour bar labelled ``label`` right of ``ax``, level with its top."""
        box = ax.get_position()
        fw, fh = fig.get_size_inches()
        height = min(box.height * fh, 3.0)
        cax = fig.add_axes(
            (box.x1 + 0.25 / fw, box.y1 - height / fh, 0.16 / fw, height / fh),
            label="<colorbar>",
        )
        mappable = ScalarMappable(norm=self.norm, cmap=self.cmap)
        bar = fig.colorbar(mappable, cax=cax)
        bar.set_label(label, fontsize=max(8.0, fontsize + 1))
        bar.ax.tick_params(labelsize=max(7.0, fontsize))


# ------------------------------------------------------------------- legend
class _KindHandle(HandlerBase):
    """Draws a legend key as a short edge with the type's marks."""

    def __init__(self, pen: Pen, weighted: bool) -> None:
        super().__init__()
        self.pen = pen
        self.weighted = weighted

    def create_artists(
        self, legend, orig_handle, xdescent, ydescent, width, height, fontsize, trans
    ):
        kind: EdgeKind = orig_handle
        colour = "#303030" if self.weighted else kind.color
        y = height / 2 - ydescent
        r = self.pen.circle_radius
        x0 = -xdescent + (2 * r if kind.marks[0] == CIRCLE else 0)
        x1 = -xdescent + width - (2 * r if kind.marks[1] == CIRCLE else 0)
        artists = [
            FancyArrowPatch(
                (x0, y),
                (x1, y),
                arrowstyle=_arrowstyle(kind),
                mutation_scale=self.pen.head,
                color=colour,
                linewidth=self.pen.linewidth,
                linestyle=kind.linestyle,
                shrinkA=0,
                shrinkB=0,
                transform=trans,
            )
        ]
        for mark, x in ((kind.marks[0], x0 - r), (kind.marks[1], x1 + r)):
            if mark == CIRCLE:
                artists.append(_circle_marker(x, y, colour, self.pen, transform=trans))
        return artists


def _legend(
    ax: plt.Axes,
    kinds: list[EdgeKind],
    pen: Pen,
    *,
    weighted: str | None,
    unweighted: bool = False,
    clustered: bool = False,
) -> None:
    """The edge types present, in a row (or rows) under the picture, outside the axes.

    ``weighted`` is the weights' label when edges are coloured by weight;
    ``unweighted`` adds a grey entry for edges that have no number; ``clustered``
    the entries that read a drawing by clusters.
    """
    if not kinds and not clustered:
        return
    handles: list[object] = list(kinds)
    labels = [k.label for k in kinds]
    if unweighted:
        handles.append(Line2D([], [], color=_UNWEIGHTED, linewidth=pen.linewidth))
        labels.append(f"no {weighted}")
    if clustered:
        handles += [
            Patch(facecolor=_NODE_FACE, edgecolor=_NODE_EDGE, linewidth=_LINKED_BORDER),
            Line2D([], [], color=_LINK, linewidth=2.0),
        ]
        labels += ["bold box: also has edges to other clusters", "n: edges between clusters"]
    width = ax.get_figure().get_size_inches()[0]
    columns = max(1, min(len(handles), int(width // 2.1)))
    ax.legend(
        handles,
        labels,
        handler_map={EdgeKind: _KindHandle(pen, weighted is not None)},
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=columns,
        frameon=False,
        fontsize=9,
        handlelength=3.2,
        columnspacing=1.6,
        title="edges" if weighted is None else f"edges (colour: {weighted})",
        title_fontsize=9,
    )


# ----------------------------------------------------------------- clusters
def _captions(clustering: Clustering) -> list[str]:
    """Each cluster's frame caption: its title, then the clusters it shares most edges with."""
    captions = []
    for k, cluster in enumerate(clustering.clusters):
        linked = clustering.linked(k)
        shown = ", ".join(f"{clustering.clusters[j].label} ({n})" for j, n in linked[:4])
        more = f", {len(linked) - 4} more" if len(linked) > 4 else ""
        lines = [cluster.title]
        if linked:
            lines.append(f"edges to {shown}{more}")
        captions.append("\n".join(lines))
    return captions


def _linked_variables(graph: Graph, clustering: Clustering) -> set[str]:
    """The variables with an edge to another cluster."""
    where = clustering.cluster_of()
    return {v for e in graph.edges() if where[e.a] != where[e.b] for v in (e.a, e.b)}


def _frame_corners(layout: GraphLayout) -> list[Point]:
    return [corner for f in layout.frames for corner in (f.box[:2], f.box[2:])]


def _draw_frames(ax: plt.Axes, layout: GraphLayout) -> None:
    """Each cluster's frame, its caption inside its top left corner."""
    for frame in layout.frames:
        x0, y0, x1, y1 = frame.box
        ax.add_patch(
            FancyBboxPatch(
                (x0, y0),
                x1 - x0,
                y1 - y0,
                boxstyle="round,pad=0,rounding_size=0.08",
                facecolor=_FRAME_FACE,
                edgecolor=_FRAME_EDGE,
                linewidth=0.9,
                zorder=0,
                gid=f"frame {frame.caption.split(' ')[0]}",
            )
        )
        ax.text(
            x0 + 0.1,
            y1 - 0.06,
            frame.caption,
            ha="left",
            va="top",
            fontsize=layout.fontsize,
            linespacing=1.1,
            color="#33452a",
            zorder=4,
            parse_math=False,
        )


@dataclass(frozen=True)
class _ClusterMap:
    """The map of the clusters: one box per cluster, one line per pair of clusters that
    share edges, labelled with their number; laid out by the same engine as a graph
    (a cluster is a variable, a link an undirected edge) and placed above the frames."""

    layout: GraphLayout
    labels: tuple[str, ...]
    links: dict[tuple[int, int], int]

    @classmethod
    def of(cls, clustering: Clustering, below: GraphLayout) -> _ClusterMap:
        labels = tuple(f"{c.label} · {len(c.names)}" for c in clustering.clusters)
        marks = np.zeros((len(labels), len(labels)), dtype=np.int8)
        for i, j in clustering.links:
            marks[i, j] = marks[j, i] = TAIL
        raw = graph_layout(Graph(labels, marks))
        # Spread the boxes (the layout spaces them for one label per edge end): each
        # line needs room for its number.
        cx, cy = np.mean([p for p in raw.positions.values()], axis=0)
        spread = {
            n: (cx + _MAP_SPREAD * (x - cx), cy + _MAP_SPREAD * (y - cy))
            for n, (x, y) in raw.positions.items()
        }
        bx0, by0, bx1, _ = bounds(spread, raw.sizes)
        fx0, _, fx1, fy1 = bounds({}, {}, _frame_corners(below) or [(0.0, 0.0)])
        dx = (fx0 + fx1) / 2 - (bx0 + bx1) / 2
        dy = fy1 + _MAP_GAP + 0.3 - by0
        moved = {n: (x + dx, y + dy) for n, (x, y) in spread.items()}
        layout = GraphLayout(moved, raw.sizes, {}, raw.isolated, raw.fontsize)
        return cls(layout, labels, dict(clustering.links))

    def corners(self) -> list[Point]:
        x0, y0, x1, y1 = bounds(self.layout.positions, self.layout.sizes)
        return [(x0, y0), (x1, y1 + 0.35)]

    def draw(self, ax: plt.Axes, fontsize: float) -> None:
        positions = self.layout.positions
        most = max(self.links.values(), default=1)
        for (i, j), count in self.links.items():
            (xa, ya), (xb, yb) = positions[self.labels[i]], positions[self.labels[j]]
            ax.add_line(
                Line2D(
                    [xa, xb],
                    [ya, yb],
                    color=_LINK,
                    linewidth=0.6 + 2.4 * math.sqrt(count / most),
                    zorder=1,
                    gid=f"link {self.labels[i].split()[0]} {self.labels[j].split()[0]}",
                )
            )
            ax.text(
                (xa + xb) / 2,
                (ya + yb) / 2,
                str(count),
                ha="center",
                va="center",
                fontsize=max(6.0, self.layout.fontsize - 1),
                color="#404040",
                zorder=2,
                bbox={"boxstyle": "round,pad=0.1", "facecolor": "white", "edgecolor": "none"},
            )
        for label in self.labels:
            _draw_node(ax, label, self.layout)
        x0, _, _, y1 = bounds(positions, self.layout.sizes)
        ax.text(
            x0,
            y1 + 0.12,
            "cluster map: a line's number counts the edges between two clusters",
            ha="left",
            va="bottom",
            fontsize=max(fontsize, self.layout.fontsize),
            color="#505050",
            style="italic",
        )
