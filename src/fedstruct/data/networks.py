"""The benchmark Bayesian networks fedstruct ships, read offline.

The bnlearn repository's networks (Scutari 2010, https://www.bnlearn.com/bnrepository/)
are read from the ``.bif.gz`` files inside pgmpy 1.0's wheel with our own reader
(:mod:`fedstruct.data.bif`) — nothing is downloaded. ``child3`` and ``alarm3`` are
built by tiling (:mod:`fedstruct.data.tiling`) with a fixed seed, so they are the
same network on every call and machine. Parsed networks are cached in-process.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from fedstruct.data.bif import bundled_bif_path, read_bif
from fedstruct.data.discrete import DiscreteNetwork
from fedstruct.data.tiling import tile_network
from fedstruct.errors import UnknownNetworkError, unknown_choice_message

__all__ = ["NetworkInfo", "list_networks", "load_network", "network_names"]

#: Seed of the tiled networks' connecting edges and CPT rows (the year of the tiling paper).
TILING_SEED = 2006


@dataclass(frozen=True)
class NetworkInfo:
    """What ``fedstruct datasets`` shows about a benchmark network."""

    name: str
    n_nodes: int
    n_edges: int
    source: str
    description: str


_BNLEARN = "bnlearn repository (pgmpy 1.0 wheel)"

_REGISTRY: tuple[NetworkInfo, ...] = (
    NetworkInfo("cancer", 5, 4, _BNLEARN, "Lung cancer toy network (Korb & Nicholson 2010)"),
    NetworkInfo("earthquake", 5, 4, _BNLEARN, "Burglary/earthquake alarm (Korb & Nicholson 2010)"),
    NetworkInfo("survey", 6, 6, _BNLEARN, "Transport usage survey (Scutari & Denis 2014)"),
    NetworkInfo(
        "asia",
        8,
        8,
        _BNLEARN,
        "Chest clinic: tuberculosis, lung cancer, bronchitis (Lauritzen & Spiegelhalter 1988)",
    ),
    NetworkInfo(
        "sachs",
        11,
        17,
        _BNLEARN,
        "Protein signalling, discretised flow cytometry (Sachs et al. 2005)",
    ),
    NetworkInfo(
        "child",
        20,
        25,
        _BNLEARN,
        "Congenital heart disease in newborns (Spiegelhalter et al. 1993)",
    ),
    NetworkInfo("insurance", 27, 52, _BNLEARN, "Car insurance risk (Binder et al. 1997)"),
    NetworkInfo("water", 32, 66, _BNLEARN, "Waste-water treatment plant (Jensen et al. 1989)"),
    NetworkInfo(
        "alarm", 37, 46, _BNLEARN, "Patient monitoring in intensive care (Beinlich et al. 1989)"
    ),
    NetworkInfo("barley", 48, 84, _BNLEARN, "Malting barley yield (Kristensen & Rasmussen 2002)"),
    NetworkInfo(
        "hailfinder", 56, 66, _BNLEARN, "Severe summer hail forecasting (Abramson et al. 1996)"
    ),
    NetworkInfo(
        "child3",
        60,
        79,
        "tiled from child (Tsamardinos et al. 2006)",
        "Three tiles of Child joined by 4 random edges; variables V_1, V_2, V_3",
    ),
    NetworkInfo("hepar2", 70, 123, _BNLEARN, "Liver disorders (Onisko 2003)"),
    NetworkInfo("win95pts", 76, 112, _BNLEARN, "Windows 95 printer troubleshooting (Microsoft)"),
    NetworkInfo("pathfinder", 109, 195, _BNLEARN, "Lymph-node pathology (Heckerman et al. 1992)"),
    NetworkInfo(
        "alarm3",
        111,
        149,
        "tiled from alarm (Tsamardinos et al. 2006)",
        "Three tiles of Alarm joined by 11 random edges; variables V_1, V_2, V_3",
    ),
    NetworkInfo("andes", 223, 338, _BNLEARN, "Physics problem solving (Conati et al. 1997)"),
    NetworkInfo(
        "diabetes",
        413,
        602,
        _BNLEARN,
        "Insulin dose adjustment, DIAS; up to 21 states (Andreassen et al. 1991)",
    ),
    NetworkInfo(
        "pigs", 441, 592, _BNLEARN, "Pig breeding pedigree, disease genotypes (Jensen 1997)"
    ),
    NetworkInfo(
        "link", 724, 1125, _BNLEARN, "Genetic linkage in a large pedigree (Jensen & Kong 1999)"
    ),
    NetworkInfo(
        "munin",
        1041,
        1397,
        _BNLEARN,
        "Electromyography diagnosis, MUNIN; up to 21 states (Andreassen et al. 1989)",
    ),
)

#: Tiled networks: name -> (base network, number of tiles, number of connecting edges).
_TILED: dict[str, tuple[str, int, int]] = {"child3": ("child", 3, 4), "alarm3": ("alarm", 3, 11)}

_BY_NAME = {info.name: info for info in _REGISTRY}


def list_networks() -> tuple[NetworkInfo, ...]:
    """Every shipped network with its size, source and a one-line description (by size)."""
    return _REGISTRY


def network_names() -> tuple[str, ...]:
    """The names :func:`load_network` accepts."""
    return tuple(info.name for info in _REGISTRY)


def load_network(name: str) -> DiscreteNetwork:
    """Load a benchmark network by name (case-insensitive), from an in-process cache.

    Parameters
    ----------
    name
        One of :func:`network_names`: asia, cancer, earthquake, survey, sachs, child,
        insurance, alarm, hailfinder, barley, water, hepar2, win95pts, pathfinder, andes,
        diabetes, pigs, link, munin, child3, alarm3.

    Returns
    -------
    DiscreteNetwork
        An immutable network; every call with the same name returns the same object.

    Raises
    ------
    UnknownNetworkError
        If ``name`` is not a shipped network (the message lists the valid names).
    DataError
        If pgmpy 1.0 (which carries the files) is not installed.
    """
    key = name.strip().lower() if isinstance(name, str) else ""
    if key not in _BY_NAME:
        raise UnknownNetworkError(unknown_choice_message("network", name, network_names()))
    return _load(key)


@cache
def _load(name: str) -> DiscreteNetwork:
    if name in _TILED:
        base, tiles, edges = _TILED[name]
        return tile_network(_load(base), tiles, edges, seed=[TILING_SEED, tiles, edges], name=name)
    return read_bif(bundled_bif_path(name), name=name)
