"""fedCI's evaluation protocol (Hahn et al., fedCI-IOD), re-implemented in numpy.

The protocol (maxhahn/fedci, ``iod_v_fedci.py`` and ``ci_functions.r`` at the parent of
commit 33243ca, February 2025) draws, per run:

1. one of 100 random 5-variable PAGs with two 4-variable subsets (``100randomPAGs.RData``:
   ``truePAGs``, ``subsetsList``, made by FCI.Utils' ``generateUniqueRandomPAGs``);
2. a kind per variable, uniformly among continuous, binary, ordinal (3 or 4 levels) and
   nominal (3 or 4 levels);
3. rows from the PAG by FCI.Utils' ``generateDatasetFromPAG(type="mixed")``: a MAG of the
   PAG (pcalg's ``pag2magAM``), its canonical DAG (dagitty: a latent parent for each
   bidirected edge) and simMixedDAG's parametric model: every node is the sum over its
   parents of ``beta * parent`` (a discrete parent: one ``beta`` per level but the first),
   the betas ``N(0, 1)`` redrawn until all are at least 0.2 in absolute value, plus
   Gaussian noise of the same variance as that sum (variance 1 at a root); a discrete
   node is cut at the standard normal's quantiles into its levels;
4. sites: the rows cut at ``n`` random points (shares ``U(0, 1) + 0.03``, normalised)
   into ``3`` or ``5`` consecutive blocks; site 1 keeps the PAG's first subset, site 2
   its second, every other site all variables but one drawn at random;
5. the whole draw (kinds, parameters, rows, cuts) is repeated until every site has at
   least 5 rows, no discrete column constant at a site and at least 3 rows in every
   combination of a site's discrete values that occurs there.

R's random streams are not reproduced (numpy draws the same distributions), the MAG of
a PAG with circle-circle edges is the one a maximum-cardinality search from the first
variable orients (pcalg's ``pag2magAM`` makes a MAG of the same equivalence class), and
without the ``.RData`` file (:func:`random_setups`) MAGs are drawn as FCI.Utils'
``getRandomMAG`` draws them (its ``generateUniqueRandomPAGs`` defaults) with two random
4-variable subsets, without the PAG round trip.
"""

from __future__ import annotations

import gzip
import itertools
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import norm

#: A variable kind of the protocol and its possible numbers of levels.
KINDS = {"continuous": (1,), "binary": (2,), "ordinal": (3, 4), "nominal": (3, 4)}
#: The protocol's sample sizes and site counts (``num_samples_options``,
#: ``num_clients_options``).
SAMPLES = (1000, 2000)
SITES = (3, 5)
#: pcalg's edge marks: ``amat[i, j]`` is the mark at ``j`` of the edge ``i - j``.
CIRCLE, ARROW, TAIL = 1, 2, 3


@dataclass(frozen=True)
class Setup:
    """One of the protocol's PAGs (pcalg marks) and its two variable subsets."""

    names: tuple[str, ...]
    pag: np.ndarray
    subsets: tuple[tuple[str, ...], tuple[str, ...]]


@dataclass
class Federation:
    """One drawn run: each site's level codes / values and the variables' kinds."""

    kinds: dict[str, str]
    levels: dict[str, int]
    sites: list[dict[str, np.ndarray]]
    shares: list[float]
    tries: int


# ------------------------------------------------------------------ the .RData file
def _read_r_serialized(raw: bytes) -> object:
    """An R object from XDR serialisation (version 3): enough for lists of numeric
    matrices and character vectors (``{"type", "value", "attr"}`` dicts)."""
    pos = 0
    refs: list[object] = []

    def u32() -> int:
        nonlocal pos
        (value,) = struct.unpack(">i", raw[pos : pos + 4])
        pos += 4
        return value

    def item() -> object:
        nonlocal pos
        flags = u32()
        kind = flags & 0xFF
        has_attr, has_tag = bool(flags & (1 << 9)), bool(flags & (1 << 10))
        if kind == 254:  # NILVALUE
            return None
        if kind == 255:  # a reference to an earlier symbol
            return refs[(flags >> 8) - 1]
        if kind == 1:  # SYMSXP
            symbol = ("symbol", item())
            refs.append(symbol)
            return symbol
        if kind == 9:  # CHARSXP
            n = u32()
            if n == -1:
                return None
            text = raw[pos : pos + n].decode()
            pos += n
            return text
        if kind == 2:  # LISTSXP (pairlist)
            if has_attr:
                item()
            tag = item() if has_tag else None
            head = (tag[1] if isinstance(tag, tuple) else None, item())
            tail = item()
            return [head, *(tail if isinstance(tail, list) else [])]
        if kind in (10, 13):  # logical, integer
            n = u32()
            value: object = list(struct.unpack(f">{n}i", raw[pos : pos + 4 * n]))
            pos += 4 * n
        elif kind == 14:  # double
            n = u32()
            value = list(struct.unpack(f">{n}d", raw[pos : pos + 8 * n]))
            pos += 8 * n
        elif kind in (16, 19, 20):  # character vector, list, expression
            value = [item() for _ in range(u32())]
        else:
            raise ValueError(f"R object type {kind} is not read here")
        attr = dict(item()) if has_attr else {}  # type: ignore[arg-type]
        return {"type": kind, "value": value, "attr": attr}

    if raw[:2] != b"X\n":
        raise ValueError("not an XDR-serialised R object")
    pos = 2
    version = u32()
    u32(), u32()
    if version == 3:
        length = u32()
        pos += length  # the native encoding's name
    return item()


def read_setups(path: Path) -> list[Setup]:
    """The protocol's PAGs and subsets from ``100randomPAGs.RData``."""
    raw = gzip.decompress(path.read_bytes())
    if raw[:5] != b"RDX3\n":
        raise ValueError(f"{path}: not an .RData file of format 3")
    objects = dict(_read_r_serialized(raw[5:]))  # type: ignore[arg-type]
    setups = []
    for pag, subsets in zip(
        objects["truePAGs"]["value"], objects["subsetsList"]["value"], strict=True
    ):
        d = pag["attr"]["dim"]["value"][0]
        names = tuple(pag["attr"]["dimnames"]["value"][0]["value"])
        amat = np.array(pag["value"], dtype=np.int64).reshape(d, d, order="F")
        first, second = (tuple(sorted(s["value"])) for s in subsets["value"])
        setups.append(Setup(names, amat, (first, second)))
    return setups


# ------------------------------------------------------------------ graphs
def _is_ancestral(mag: np.ndarray) -> bool:
    """No directed cycle, and no bidirected edge between an ancestor and its descendant."""
    reach = (mag == ARROW) & (mag.T == TAIL)  # reach[i, j]: i -> j, then i ->...-> j
    for k in range(len(mag)):
        reach |= reach[:, [k]] & reach[[k], :]
    if reach.diagonal().any():
        return False
    both = (mag == ARROW) & (mag.T == ARROW)
    return not (both & (reach | reach.T)).any()


def random_mag(d: int, rng: np.random.Generator, directed: float, bidirected: float) -> np.ndarray:
    """FCI.Utils' ``getRandomMAG``: ``floor(pairs * directed)`` pairs ``i -> j`` (``i < j``),
    ``floor(pairs * bidirected)`` of the others ``i <-> j``, drawn until ancestral."""
    pairs = list(itertools.combinations(range(d), 2))
    while True:
        mag = np.zeros((d, d), dtype=np.int64)
        order = rng.permutation(len(pairs))
        n_dir = int(len(pairs) * directed)
        n_bi = int(len(pairs) * bidirected)
        for k in order[:n_dir]:
            i, j = pairs[k]
            mag[i, j], mag[j, i] = ARROW, TAIL
        rest = order[n_dir:]
        for k in rng.choice(rest, size=n_bi, replace=False):
            i, j = pairs[k]
            mag[i, j] = mag[j, i] = ARROW
        if _is_ancestral(mag):
            return mag


def random_setups(count: int, seed: int) -> list[Setup]:
    """Setups without the ``.RData`` file (module docstring): random 5-node MAGs (used
    as the "PAG": :func:`pag_to_mag` leaves a MAG as it is) and two random subsets."""
    rng = np.random.default_rng(seed)
    names = tuple("ABCDE")
    setups = []
    for _ in range(count):
        mag = random_mag(5, rng, directed=0.2, bidirected=0.3)
        first, second = (
            tuple(sorted(map(str, rng.choice(names, 4, replace=False)))) for _ in range(2)
        )
        while second == first:
            second = tuple(sorted(map(str, rng.choice(names, 4, replace=False))))
        setups.append(Setup(names, mag, (first, second)))
    return setups


def pag_to_mag(pag: np.ndarray) -> np.ndarray:
    """A MAG of the PAG (Zhang 2008, Theorem 2): ``o->`` becomes ``->``; the circle
    component is oriented acyclically without unshielded colliders, along a
    maximum-cardinality search started at the first variable."""
    mag = pag.copy()
    mag[(pag == CIRCLE) & (pag.T == ARROW)] = TAIL
    circle = (mag == CIRCLE) & (mag.T == CIRCLE)
    d = len(mag)
    order: list[int] = []
    weight = np.zeros(d, dtype=np.int64)
    while len(order) < d:
        free = [v for v in range(d) if v not in order]
        v = max(free, key=lambda u: (weight[u], -u)) if order else 0
        order.append(v)
        weight[circle[v]] += 1
    rank = {v: k for k, v in enumerate(order)}
    for i, j in zip(*np.nonzero(np.triu(circle)), strict=True):
        a, b = (i, j) if rank[i] < rank[j] else (j, i)
        mag[a, b], mag[b, a] = ARROW, TAIL
    if ((mag == TAIL) & (mag.T == TAIL)).any() or (mag == CIRCLE).any():
        raise ValueError("the PAG's MAG has an undirected edge: not a protocol PAG")
    return mag


def canonical_dag(mag: np.ndarray) -> tuple[list[list[int]], int]:
    """dagitty's canonical DAG of a MAG without undirected edges: each ``i <-> j`` gets a
    latent parent of both. Returns each node's parents (observed nodes first, then the
    latents) and the number of observed nodes."""
    d = len(mag)
    parents: list[list[int]] = [
        [int(i) for i in np.flatnonzero((mag[:, j] == ARROW) & (mag[j, :] == TAIL))]
        for j in range(d)
    ]
    for i, j in itertools.combinations(range(d), 2):
        if mag[i, j] == ARROW and mag[j, i] == ARROW:
            latent = len(parents)
            parents.append([])
            parents[i].append(latent)
            parents[j].append(latent)
    return parents, d


# ------------------------------------------------------------------ rows
def _topological(parents: list[list[int]]) -> list[int]:
    order: list[int] = []
    done: set[int] = set()
    while len(order) < len(parents):
        for v, ps in enumerate(parents):
            if v not in done and all(p in done for p in ps):
                order.append(v)
                done.add(v)
    return order


def simulate(
    parents: list[list[int]], levels: list[int], n: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """simMixedDAG's parametric model (module docstring): each node's values, a level code
    ``0..levels-1`` for a discrete node, a number otherwise."""
    betas: dict[tuple[int, int], np.ndarray] = {}
    for _ in range(101):  # FCI.Utils: redraw until every |beta| >= 0.2 (coef_thresh)
        betas = {
            (v, p): rng.standard_normal(max(levels[p] - 1, 1))
            for v, ps in enumerate(parents)
            for p in ps
        }
        if not betas or min(float(np.abs(b).min()) for b in betas.values()) >= 0.2:
            break
    values: list[np.ndarray] = [np.empty(0)] * len(parents)
    for v in _topological(parents):
        signal = np.zeros(n)
        for p in parents[v]:
            if levels[p] > 1:
                dummies = values[p][:, None] == np.arange(1, levels[p])[None, :]
                signal += dummies.astype(np.float64) @ betas[(v, p)]
            else:
                signal += values[p] * betas[(v, p)][0]
        spread = float(np.var(signal, ddof=1)) if n > 1 else 0.0
        noisy = signal + rng.normal(0.0, np.sqrt(spread) if spread > 0 else 1.0, n)
        if levels[v] > 1:
            cuts = norm.ppf(np.linspace(0, 1, levels[v] + 1)[1:-1])
            values[v] = np.searchsorted(cuts, noisy, side="left").astype(np.int64)
        else:
            values[v] = noisy
    return values


def _valid_site(columns: dict[str, np.ndarray], levels: dict[str, int]) -> bool:
    """The protocol's acceptance of one site (module docstring, step 5)."""
    n = len(next(iter(columns.values())))
    if n < 5:
        return False
    discrete = [c for c in columns if levels[c] > 1]
    if not discrete:
        return True
    codes = np.stack([columns[c] for c in discrete], axis=1)
    if any(len(np.unique(codes[:, k])) == 1 for k in range(codes.shape[1])):
        return False
    _, counts = np.unique(codes, axis=0, return_counts=True)
    return bool(counts.min() >= 3)


def draw_federation(
    setup: Setup, n: int, n_sites: int, rng: np.random.Generator, max_tries: int = 100_000
) -> Federation:
    """One run of the protocol on ``setup`` (module docstring, steps 2-5).

    Raises
    ------
    RuntimeError
        When ``max_tries`` draws are all refused.
    """
    names = setup.names
    mag = pag_to_mag(setup.pag)
    parents, d = canonical_dag(mag)
    for tries in range(1, max_tries + 1):
        kinds = {v: str(rng.choice(list(KINDS))) for v in names}
        levels = {v: int(rng.choice(KINDS[kinds[v]])) for v in names}
        node_levels = [levels[v] for v in names] + [1] * (len(parents) - d)
        values = simulate(parents, node_levels, n, rng)
        rows = {v: values[k] for k, v in enumerate(names)}
        shares = rng.uniform(0, 1, n_sites) + 0.03
        shares = shares / shares.sum()
        bounds = [0, *np.cumsum(shares)[:-1].tolist(), 1.0]
        others = [sorted(names, key=lambda _: rng.random())[:-1] for _ in range(n_sites - 2)]
        columns = [list(setup.subsets[0]), list(setup.subsets[1]), *others]
        sites = []
        for k in range(n_sites):
            start, end = int(bounds[k] * n), int(bounds[k + 1] * n)
            sites.append({v: rows[v][start:end] for v in columns[k]})
        if all(_valid_site(site, levels) for site in sites):
            return Federation(kinds, levels, sites, shares.tolist(), tries)
    raise RuntimeError(f"no acceptable draw in {max_tries} tries")
