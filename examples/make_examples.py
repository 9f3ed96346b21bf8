"""Write the per-site example files of docs/your-data.md from data fedstruct ships.

    python examples/make_examples.py          # rewrites examples/*/ (deterministic)

Each folder is a federation as a user would bring it: one file (or image folder) per
site, plus a manifest where the method needs roles.

* ``sachs-conditions/``: the real Sachs et al. (2005) flow cytometry, one site per
  experimental condition (nine CSV files), discretised into three levels named
  ``low``/``mid``/``high`` (Hartemink's method, as Sachs et al. did), each site with its
  own marker panel (one or two markers not measured there) — FedCDnv's setting.
* ``sachs-interventions/``: the same data as three hospitals that each hold some
  general-stimulation cells (observational) and some reagent conditions, with a
  ``regime`` column naming the protein the reagent acts on — FED-CD's setting.
* ``asia-concepts/``: F-CMs' concept data (App. B.1) for asia as three sites: input
  columns ``x0..x15``, the concept columns and the task ``dysp``, and each site's own
  concept graph (``graph.json``), named in ``federation.yaml``.
* ``health/``: the RAND Health Insurance Experiment table as three sites that
  over-represent sub-populations, each with a column the others lack — FedNGM's setting.
* ``digits/``: scikit-learn's 8x8 digits as three sites: two image folders
  (``SITE/CLASS/*.png``) and one ``.npz`` — CAFE's setting.
* ``asia-task/``: rows of the asia network with text states (``yes``/``no``) at three
  sites, to predict ``dysp`` — FedAvg.
* ``breast-cancer/``: scikit-learn's breast-cancer table (30 continuous measurements
  and the ``diagnosis``) as four hospitals of 40/25/20/15 % of the rows — FedAvg on
  continuous columns (:func:`fedstruct.data.datasets.tables.breast_cancer_sites`).
* ``diabetes/``: scikit-learn's diabetes table in its original units as four
  hospitals, 5 % of every feature's values missing at random, to regress
  ``progression`` — FedAvg's regression with imputation.
* ``mixed-interventions/``: a mixed table (four continuous, two yes/no and two
  three-level columns) sampled from a conditional-Gaussian model with a known DAG
  (``truth.json``), as three labs that each hold observational rows and rows under
  perfect interventions on their own variables (``regime`` column), 2 % of the
  values missing at random — FED-CD on mixed, incomplete columns.
* ``breast-cancer-skew/``: the breast-cancer table as four hospitals whose shares of
  malignant tumours differ (a Dirichlet(0.5) label skew: 9 %, 24 %, 98 %, 25 %), with
  a categorical ``tumour_size`` and 3 % of every feature's values missing — CAFE on a
  mixed, incomplete, class-skewed table
  (:func:`fedstruct.data.datasets.tables.breast_cancer_hospitals`).
* ``anes96/``: statsmodels' 1996 election survey as three sites by education
  (integer codes: 7-point scales and party identification ``PID`` ordinal, ``vote``
  categorical, age, income and population continuous) — FedNGM on a mixed table.
* ``anes96-missing/``: the same sites with 4 % of every column's values but the
  vote's missing at random — FedCDnv, FedAvg and FedNGM on a mixed table with holes.
* ``breast-cancer-concepts/``: the breast-cancer table as F-CMs' concept table at four
  hospitals (26 measurements as inputs, four 0/1 concepts cut at medians, the
  diagnosis as the task), 3 % of the inputs' and concepts' values missing; a manifest
  without graph files (``federation.yaml``) and one naming a hand-made graph
  (``federation-hand.yaml``).

Only some folders: ``python examples/make_examples.py breast-cancer diabetes``.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from PIL import Image

from fedstruct.data import load_network
from fedstruct.data.conditional_gaussian import ConditionalGaussianSCM
from fedstruct.data.datasets import tables
from fedstruct.data.datasets.images import load_digits
from fedstruct.data.datasets.rand_hie import load_health_insurance
from fedstruct.data.datasets.sachs import SACHS_CONDITIONS, load_sachs_data, sachs_row_conditions
from fedstruct.data.datasets.tables import breast_cancer_sites, diabetes_sites
from fedstruct.experiments.fcm import make_concept_dataset
from fedstruct.graphs import Graph, write_graph
from fedstruct.graphs.random import random_dag

HERE = Path(__file__).resolve().parent
LEVELS = np.array(["low", "mid", "high"])
SEED = 0


def _fresh(name: str) -> Path:
    folder = HERE / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def _sachs_levels() -> tuple[pd.DataFrame, pd.Series]:
    codes = load_sachs_data("hartemink")
    text = pd.DataFrame({c: LEVELS[codes[c].to_numpy()] for c in codes.columns})
    return text, sachs_row_conditions()


def sachs_conditions() -> None:
    """Nine sites, one per condition, each without one or two markers."""
    folder = _fresh("sachs-conditions")
    text, condition = _sachs_levels()
    rng = np.random.default_rng(SEED)
    for k, c in enumerate(SACHS_CONDITIONS):
        rows = text[condition.to_numpy() == c.name]
        dropped = rng.choice(rows.columns, size=1 + k % 2, replace=False)
        rows.drop(columns=list(dropped)).to_csv(folder / f"{c.name.replace('+', '-')}.csv",
                                                index=False)  # fmt: skip


def sachs_interventions() -> None:
    """Three hospitals: general-stimulation cells plus reagent conditions, ``regime``
    naming the protein each reagent acts on (``obs`` for general stimulation)."""
    folder = _fresh("sachs-interventions")
    text, condition = _sachs_levels()
    target = {c.name: c.target or "obs" for c in SACHS_CONDITIONS}
    general = np.flatnonzero(condition.isin(["cd3cd28", "cd3cd28icam2"]).to_numpy())
    general = np.random.default_rng(SEED).permutation(general)
    hospitals = {
        "hospital-a": ["cd3cd28+aktinhib", "cd3cd28+g0076"],
        "hospital-b": ["cd3cd28+psitect", "cd3cd28+u0126"],
        "hospital-c": ["cd3cd28+ly", "pma", "b2camp"],
    }
    for share, (name, reagents) in zip(np.array_split(general, 3), hospitals.items(), strict=True):
        mask = condition.isin(reagents).to_numpy()
        rows = pd.concat([text.iloc[share], text[mask]])
        rows.insert(0, "regime", condition.iloc[np.r_[share, np.flatnonzero(mask)]].map(target))
        rows.to_csv(folder / f"{name}.csv", index=False)


def asia_concepts() -> None:
    """F-CMs: three sites with inputs, concepts and the task, and their own graphs."""
    folder = _fresh("asia-concepts")
    data = make_concept_dataset("asia", n_samples=6000, latent_dim=16, autoencoder_epochs=30,
                                seed=SEED)  # fmt: skip
    concepts = [v for v in data.graph.names if v != data.task]
    frame = pd.DataFrame(np.round(data.x, 3), columns=[f"x{i}" for i in range(data.x.shape[1])])
    frame = pd.concat([frame, data.labels.reset_index(drop=True)], axis=1)
    seen = {"site-1": concepts[:5], "site-2": concepts[2:], "site-3": concepts}
    sites = []
    for name, part in zip(seen, np.array_split(np.arange(len(frame)), 3), strict=True):
        columns = [*frame.columns[: data.x.shape[1]], *seen[name], data.task]
        frame.iloc[part][columns].to_csv(folder / f"{name}.csv", index=False)
        write_graph(data.graph.restrict([*seen[name], data.task]), folder / f"{name}-graph.json")
        sites.append({"name": name, "path": f"{name}.csv", "graph": f"{name}-graph.json"})
    manifest = {"task": data.task, "concepts": concepts, "sites": sites}
    (folder / "federation.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))


def health() -> None:
    """FedNGM: the RAND HIE table, three sub-population sites with a private column each."""
    folder = _fresh("health")
    data = load_health_insurance().frame
    rng = np.random.default_rng(SEED)
    segments = {
        "free-care": (data["plan"] == 0, "fmde"),
        "poor-health": (data["health"] >= 2, "physlm"),
        "deductible": (data["deductible"] == 1, "lpi"),
    }
    private = {col for _, col in segments.values()}
    for name, (inside, own) in segments.items():
        favoured = rng.choice(np.flatnonzero(inside.to_numpy()), 900, replace=False)
        others = rng.choice(np.flatnonzero(~inside.to_numpy()), 600, replace=False)
        rows = data.iloc[np.sort(np.r_[favoured, others])]
        rows.drop(columns=sorted(private - {own})).to_csv(folder / f"{name}.csv", index=False)


def digits() -> None:
    """CAFE: two image-folder sites and one ``.npz`` site."""
    folder = _fresh("digits")
    images = load_digits(seed=SEED)
    x, y = images.train_images, images.train_labels
    order = np.random.default_rng(SEED).permutation(len(y))[:600]
    for k, part in enumerate(np.array_split(order, 3)):
        name = f"clinic-{k + 1}"
        if k == 2:
            np.savez_compressed(folder / f"{name}.npz", images=np.round(x[part] * 255)
                                .astype(np.uint8), labels=y[part])  # fmt: skip
            continue
        for i in part:
            target = folder / name / str(y[i])
            target.mkdir(parents=True, exist_ok=True)
            pixels = np.round(x[i, 0] * 255).astype(np.uint8)
            Image.fromarray(pixels, mode="L").save(target / f"{i:04d}.png")


def asia_task() -> None:
    """FedAvg: asia rows with text states at three sites."""
    folder = _fresh("asia-task")
    network = load_network("asia")
    rows = network.sample(3000, seed=SEED)
    states = {v: np.array(network.states[v]) for v in network.names}
    text = pd.DataFrame({v: states[v][rows[v].to_numpy()] for v in network.names})
    for k, part in enumerate(np.array_split(np.arange(len(text)), 3)):
        text.iloc[part].to_csv(folder / f"site-{k + 1}.csv", index=False)


def breast_cancer() -> None:
    """FedAvg: the breast-cancer table at four hospitals (40/25/20/15 % of the rows)."""
    folder = _fresh("breast-cancer")
    for k, rows in enumerate(breast_cancer_sites(seed=SEED)):
        rows.to_csv(folder / f"hospital-{k + 1}.csv", index=False)


def diabetes() -> None:
    """FedAvg: the diabetes table at four hospitals, 5 % of feature values missing."""
    folder = _fresh("diabetes")
    for k, rows in enumerate(diabetes_sites(seed=SEED, missing=0.05)):
        rows.to_csv(folder / f"hospital-{k + 1}.csv", index=False)


#: The mixed example's variables and kinds: lab-style names, no meaning beyond the DAG.
MIXED_KINDS = {"m1": "real", "m2": "real", "m3": "real", "m4": "real",
               "flag1": "binary", "flag2": "binary", "grade1": "categorical",
               "grade2": "categorical"}  # fmt: skip
#: Each lab's intervened variables (disjoint, as FED-CD's vertical split, §6.4).
MIXED_LABS = {"lab-a": ["m1", "flag1", "grade2"], "lab-b": ["m2", "m3", "flag2"],
              "lab-c": ["m4", "grade1"]}  # fmt: skip


def mixed_interventions(observational: int = 1200, per_target: int = 300,
                        missing: float = 0.02) -> None:  # fmt: skip
    """FED-CD: three labs over a conditional-Gaussian DAG, each with observational rows
    and rows under a uniform perfect intervention on each of its variables, states in
    words, ``missing`` of every variable's values missing completely at random."""
    folder = _fresh("mixed-interventions")
    names = list(MIXED_KINDS)
    dag = random_dag("random", len(names), seed=SEED, names=names, shuffle=True,
                     edges_per_node=1.5)  # fmt: skip
    model = ConditionalGaussianSCM(dag, MIXED_KINDS, seed=SEED, n_categories=3)
    words = {"binary": np.array(["no", "yes"]), "categorical": np.array(["low", "mid", "high"])}
    rng = np.random.default_rng(SEED)
    for k, (lab, targets) in enumerate(MIXED_LABS.items()):
        parts = [model.sample(observational, seed=[SEED, k]).frame.assign(regime="obs")]
        for j, target in enumerate(targets):
            rows = model.sample(per_target, seed=[SEED, k, j + 1],
                                interventions={target: "uniform"}).frame  # fmt: skip
            parts.append(rows.assign(regime=target))
        frame = pd.concat(parts, ignore_index=True)
        table = pd.DataFrame(
            {
                v: words[kind][frame[v].to_numpy()] if kind in words else frame[v].round(3)
                for v, kind in MIXED_KINDS.items()
            }
        ).mask(rng.random((len(frame), len(names))) < missing)
        table.insert(0, "regime", frame["regime"])
        table.to_csv(folder / f"{lab}.csv", index=False)
    write_graph(dag, folder / "truth.json")


def breast_cancer_skew() -> None:
    """CAFE: the breast-cancer table at four hospitals with their own class mixes, a
    categorical column and 3 % missing values."""
    folder = _fresh("breast-cancer-skew")
    for k, rows in enumerate(tables.breast_cancer_hospitals(seed=SEED)):
        rows.to_csv(folder / f"hospital-{k + 1}.csv", index=False)


def _write_sites(folder: Path, sites: dict[str, pd.DataFrame]) -> None:
    for name, rows in sites.items():
        rows.to_csv(folder / f"{name}.csv", index=False)


def anes96() -> None:
    """FedNGM: anes96 at three sites by education (the files of
    ``benchmarks/fedngm_anes96.py``)."""
    _write_sites(_fresh("anes96"), tables.anes96_sites())


def anes96_missing() -> None:
    """FedCDnv, FedAvg, FedNGM: anes96's sites with 4 % of the values missing."""
    _write_sites(_fresh("anes96-missing"), tables.anes96_sites(seed=SEED, missing=0.04))


def breast_cancer_concepts() -> None:
    """F-CMs: the breast-cancer concept table at four hospitals, 3 % of the inputs'
    and concepts' values missing; manifests without and with a hand-made graph."""
    folder = _fresh("breast-cancer-concepts")
    split = tables.split_sites(tables.breast_cancer_concepts(), "diagnosis", seed=SEED,
                               missing=0.03)  # fmt: skip
    concepts = list(tables.CONCEPT_CUTS.values())
    names = [f"hospital-{k + 1}" for k in range(len(split))]
    for name, rows in zip(names, split, strict=True):
        rows[concepts] = rows[concepts].astype("Int64")  # labels 0/1, holes empty
        rows.to_csv(folder / f"{name}.csv", index=False)
    hand = Graph.from_edges(
        [*concepts, "diagnosis"],
        [*((c, "diagnosis") for c in concepts), ("radius_high", "concave_points_high")],
    )
    write_graph(hand, folder / "hand-graph.json")
    roles = {"task": "diagnosis", "concepts": concepts}
    for manifest, graph in (("federation.yaml", {}), ("federation-hand.yaml",
                                                      {"graph": "hand-graph.json"})):  # fmt: skip
        sites = [{"name": n, "path": f"{n}.csv", **graph} for n in names]
        (folder / manifest).write_text(yaml.safe_dump({**roles, "sites": sites}, sort_keys=False))


MAKERS = {
    make.__name__.replace("_", "-"): make
    for make in (sachs_conditions, sachs_interventions, asia_concepts, health, digits,
                 asia_task, breast_cancer, diabetes, mixed_interventions,
                 breast_cancer_skew, anes96, anes96_missing, breast_cancer_concepts)
}  # fmt: skip


def main(names: list[str]) -> None:
    """Write the example folders ``names`` (every one when empty)."""
    unknown = [n for n in names if n not in MAKERS]
    if unknown:
        raise SystemExit(f"unknown examples {unknown}; choose from {sorted(MAKERS)}")
    for name in names or MAKERS:
        MAKERS[name]()
        print(f"wrote {name}")


if __name__ == "__main__":
    main(sys.argv[1:])
