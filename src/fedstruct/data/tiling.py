"""Tiling: a larger network from copies of a smaller one.

Tsamardinos, Statnikov, Brown & Aliferis (2006), *Generating realistic large Bayesian
networks by tiling* (FLAIRS-19): several copies ("tiles") of a network are joined by a
few random edges between tiles. This is how Child3 and Alarm3 — three tiles of Child
and Alarm — were built for the MMHC study (Tsamardinos, Brown & Aliferis 2006), and
how FedCDnv (Table 5) uses them.

Our construction, documented because no file of those networks ships:

* Tile ``t`` (1-based) renames each variable ``V`` to ``V_t`` (``HR_1``, ``HR_2``, ...);
  within a tile the structure and CPTs are the original ones.
* Each connecting edge goes from a tile to a *later* tile, so the result is acyclic.
  The tile pairs are used in turn, nearest first: for three tiles
  (1, 2), (2, 3), (1, 3), (1, 2), ...; source and target are drawn uniformly within
  their tiles, among targets that have received no connecting edge yet and whose
  in-degree is below ``max(original maximum in-degree, 3)``.
* A target ``Y`` with original parents ``pa`` and new parent ``Z`` gets the CPT
  ``P'(y | pa, z) = (1 - w) · P(y | pa) + w · q_z(y)`` with one Dirichlet(1, ..., 1)
  row ``q_z`` per state ``z`` of the new parent (shared by all ``pa``), mixing weight
  ``w = 0.5``. ``Z`` is the last axis before ``Y``'s own in the new table. The rule
  keeps every row a distribution and makes the dependence on ``Z`` real; it does not
  try to keep ``Y``'s marginal unchanged.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from fedstruct.data._shared import SeedLike, make_rng
from fedstruct.data.discrete import DiscreteNetwork
from fedstruct.errors import DataError

__all__ = ["tile_name", "tile_network"]


def tile_name(variable: str, tile: int) -> str:
    """The name of ``variable`` in tile ``tile`` (1-based): ``"HR", 2 -> "HR_2"``."""
    return f"{variable}_{tile}"


def tile_pairs(n_tiles: int) -> list[tuple[int, int]]:
    """Ordered tile pairs ``(a, b)``, ``a < b``, nearest first: (1,2), (2,3), (1,3) for 3."""
    pairs = [(a, b) for a in range(1, n_tiles + 1) for b in range(a + 1, n_tiles + 1)]
    return sorted(pairs, key=lambda p: (p[1] - p[0], p[0]))


def tile_network(
    network: DiscreteNetwork,
    n_tiles: int,
    n_connecting: int,
    *,
    seed: SeedLike,
    weight: float = 0.5,
    name: str | None = None,
) -> DiscreteNetwork:
    """Join ``n_tiles`` copies of ``network`` with ``n_connecting`` random edges.

    Parameters
    ----------
    network
        The network to tile.
    n_tiles
        Number of copies (at least 2).
    n_connecting
        Number of edges between tiles.
    seed
        Seed of the edge and CPT draws.
    weight
        Mixing weight ``w`` of the random rows in the targets' CPTs, in ``(0, 1]``.
    name
        Label of the result; defaults to ``f"{network.name}{n_tiles}"``.

    Returns
    -------
    DiscreteNetwork
        ``n_tiles * network.n_nodes`` variables and
        ``n_tiles * network.n_edges + n_connecting`` edges.

    Raises
    ------
    DataError
        If ``n_tiles < 2``, ``weight`` is outside ``(0, 1]``, or there are not enough
        eligible target variables for ``n_connecting`` edges.
    """
    if n_tiles < 2:
        raise DataError(f"tiling needs at least 2 tiles, got {n_tiles}")
    if not 0.0 < weight <= 1.0:
        raise DataError(f"tiling weight must lie in (0, 1], got {weight}")
    base = network.names
    in_deg = {v: len(network.parents(v)) for v in base}
    cap = max(max(in_deg.values(), default=0), 3)
    eligible = [v for v in base if in_deg[v] < cap]
    if n_connecting < 0 or n_connecting > (n_tiles - 1) * len(eligible):
        raise DataError(
            f"cannot add {n_connecting} connecting edges to {n_tiles} tiles of {network.name!r}: "
            f"at most {(n_tiles - 1) * len(eligible)} targets are eligible"
        )
    rng = make_rng(seed)
    names = [tile_name(v, t) for t in range(1, n_tiles + 1) for v in base]
    states = {tile_name(v, t): network.states[v] for t in range(1, n_tiles + 1) for v in base}
    parents = {
        tile_name(v, t): tuple(tile_name(p, t) for p in network.parents(v))
        for t in range(1, n_tiles + 1)
        for v in base
    }
    tables: dict[str, NDArray[np.float64]] = {
        tile_name(v, t): network.cpt(v).table for t in range(1, n_tiles + 1) for v in base
    }
    pairs = tile_pairs(n_tiles)
    used: set[str] = set()
    for e in range(n_connecting):
        a, b = pairs[e % len(pairs)]
        free = [v for v in eligible if tile_name(v, b) not in used]
        if not free:
            raise DataError(
                f"cannot add {n_connecting} connecting edges: tile {b} of {network.name!r} "
                "has no eligible target left; use fewer edges or more tiles"
            )
        source = tile_name(base[int(rng.integers(len(base)))], a)
        target = tile_name(free[int(rng.integers(len(free)))], b)
        used.add(target)
        k_new = len(states[source])
        rows = rng.dirichlet(np.ones(len(states[target])), size=k_new)
        old = tables[target]
        new = (1.0 - weight) * old[..., None, :] + weight * rows
        parents[target] = (*parents[target], source)
        tables[target] = new
    label = name if name is not None else f"{network.name}{n_tiles}"
    return DiscreteNetwork(names, states, parents, tables, name=label)
