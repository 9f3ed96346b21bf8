"""Cross-check of F-CMs' concept metrics against the reference implementations.

Two steps, on the SAME saved predictions (docs/benchmarks.md, "Concept metrics
against cem and PyC"):

1. ``save`` (fedstruct's environment): trains a small CBM and CEM on asia's concept
   data, writes their test-row predictions (concept representations, labels, the task
   probabilities under each ``do(C = s)`` and along each policy's intervention curve,
   OIS's purity and oracle matrices) to ``DIR/predictions.npz`` and fedstruct's
   metrics computed from them to ``DIR/fedstruct.json``.
2. ``check`` (a benchmark environment that has the reference, never fedstruct's):
   recomputes each metric with the reference from the saved arrays and prints the
   differences. ``--cem-src`` is a checkout of mateoespinosa/cem (its ``cem/metrics``
   files are loaded by path: the package itself needs Python < 3.9); PyC is the
   ``pytorch-concepts`` package (``torch_concepts``).

    PYTHONPATH=src .venv/bin/python benchmarks/concept_metrics_reference.py save --out DIR
    /work/venv-bench-cem/bin/python benchmarks/concept_metrics_reference.py check \\
        --out DIR --cem-src CEM_CHECKOUT
    /work/venv-bench/bin/python benchmarks/concept_metrics_reference.py check --out DIR
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import sys
import types
from pathlib import Path

import numpy as np

MODELS = ("cbm", "cem")
ROWS = 300  # test rows of CAS, OIS and NIS
SEED = 0


def save(out: Path) -> None:
    """Step 1: train, predict, save arrays and fedstruct's metrics."""
    import torch

    from fedstruct.methods.fcm import FCMRun, fit_standalone
    from fedstruct.methods.fcm import concept_metrics as cm
    from fedstruct.methods.fcm.config import INTERVENTION_POLICIES, FCMConfig
    from fedstruct.methods.fcm.evaluate import concept_representations
    from fedstruct.methods.fcm.interventions import effect_sums, intervention_counts, level_order
    from fedstruct.methods.fcm.run import pooled
    from fedstruct.methods.fcm.sources import ConceptSource
    from fedstruct.methods.fcm.train import label_matrix
    from fedstruct.runs.settings import subset

    s = FCMRun(network="asia", samples=3000, autoencoder_epochs=10, seed=SEED,
               standardise_latent=True)  # fmt: skip
    source = ConceptSource(s)
    data, part = source.data, source.partition
    test = part.test
    x = test[list(data.features)].to_numpy(np.float32)
    arrays, values = {}, {}
    for name in MODELS:
        config = subset(FCMRun(model=name, network="asia"), FCMConfig)
        fit = fit_standalone(pooled(part.clients), task=data.task, graph=data.graph,
                             cardinalities=data.cardinalities, config=config, seed=SEED,
                             max_epochs=20)  # fmt: skip
        model = fit.model
        concepts = list(model.spec.concepts)
        sample = np.random.default_rng(SEED).permutation(len(test))[:ROWS]
        reps = concept_representations(model, x[sample])
        codes = test[concepts].to_numpy(np.int64)[sample]
        chosen = [reps[c] for c in concepts]
        purity, oracle = cm.purity_matrices(chosen, codes, [2] * len(concepts), SEED)
        prefix = f"{name}_"
        arrays[prefix + "representations"] = np.stack(chosen, axis=1)  # (n, m, d)
        arrays[prefix + "labels"] = codes
        arrays[prefix + "purity"] = purity
        arrays[prefix + "oracle"] = oracle
        xt = torch.from_numpy(x.copy())
        sums = effect_sums(model, xt, concepts)
        arrays[prefix + "effects"] = np.stack([sums[c] / len(x) for c in concepts])  # (m,2,2)
        truth = label_matrix(test, model.spec)
        order = level_order(data.graph, data.task, concepts)
        curves = {}
        for policy in INTERVENTION_POLICIES:
            curve = intervention_counts(model, xt, truth, concepts, policy, order, SEED)
            curves[policy] = curve.accuracies
            arrays[f"{prefix}correct_{policy}"] = _predictions_along(
                model, xt, truth, concepts, curve.orders
            )
        arrays[prefix + "task"] = test[data.task].to_numpy(np.int64)
        values[name] = {
            "cas": cm.concept_alignment_score(chosen, codes),
            "ois": cm.oracle_impurity_score(purity, oracle),
            "nis": cm.niche_impurity_score(chosen, codes, [2] * len(concepts), SEED),
            "nis_scalar": cm.niche_impurity_score(
                [r[:, 1:2] for r in chosen], codes, [2] * len(concepts), SEED
            )
            if name == "cbm"
            else None,
            "cace": {c: cm.causal_effect(dict(enumerate(sums[c] / len(x)))) for c in concepts},
            "intervention_auc": {p: cm.intervention_auc(a) for p, a in curves.items()},
        }
    out.mkdir(parents=True, exist_ok=True)
    np.savez(out / "predictions.npz", **arrays)
    (out / "fedstruct.json").write_text(json.dumps(values, indent=1))
    print(f"saved {out / 'predictions.npz'} and {out / 'fedstruct.json'}")


def _predictions_along(model, x, truth, concepts, orders) -> np.ndarray:
    """The task's predicted state after ``t`` interventions in each row's order,
    ``(K + 1, n)`` (rows with a task label), from the model itself: what PyC's
    ``intervention_score`` scores."""
    import torch

    column = {n: i for i, n in enumerate(model.spec.nodes)}
    known = truth[:, -1] >= 0
    x, truth = x[known], truth[known]
    mask = torch.zeros(truth.shape, dtype=torch.bool)
    out = []
    with torch.no_grad():
        for t in range(orders.shape[1] + 1):
            if t:
                for r, c in enumerate(orders[:, t - 1]):
                    if c >= 0:
                        mask[r, column[concepts[c]]] = True
            out.append(model(x, truth, mask)[-1].argmax(1).numpy())
    return np.stack(out)


def _load_cem(cem_src: Path, name: str):
    """A module of ``cem/metrics`` loaded by path (``cas.py`` imports the package's
    ``oracle``, which needs TensorFlow only to train its default helper and for
    ``to_categorical``: a stand-in package holds the name; we pass the matrices)."""
    for mod in ("cem", "cem.metrics", "cem.metrics.oracle"):
        sys.modules.setdefault(mod, types.ModuleType(mod))
    sys.modules.setdefault("tensorflow", types.ModuleType("tensorflow"))
    spec = importlib.util.spec_from_file_location(f"cem_{name}", cem_src / "cem/metrics" / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _our_metrics():
    """fedstruct's concept_metrics.py loaded by path (it needs only numpy and
    scikit-learn), to run it under the benchmark environment's numpy."""
    if not hasattr(np, "trapezoid"):  # numpy < 2
        np.trapezoid = np.trapz  # noqa: NPY201  (numpy 1 has only this name)
    path = Path(__file__).parents[1] / "src/fedstruct/methods/fcm/concept_metrics.py"
    spec = importlib.util.spec_from_file_location("fedstruct_concept_metrics", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check(out: Path, cem_src: Path | None) -> None:
    """Step 2: the references on the saved arrays, against fedstruct's values."""
    arrays = np.load(out / "predictions.npz")
    ours = json.loads((out / "fedstruct.json").read_text())
    rows = []
    if cem_src is not None:
        cas = _load_cem(cem_src, "cas.py")
        oracle = _load_cem(cem_src, "oracle.py")
        niching = _load_cem(cem_src, "niching.py")
        from sklearn.neural_network import MLPClassifier

        for name in MODELS:
            reps, labels = arrays[f"{name}_representations"], arrays[f"{name}_labels"]
            with contextlib.redirect_stdout(io.StringIO()):  # cas.py prints shapes
                ref = cas.concept_alignment_score(reps, labels, labels[:, 0], 5,
                                                  progress_bar=False)[0]  # fmt: skip
            rows.append((f"{name} CAS", "cem", ours[name]["cas"], ref))
            # fedstruct's k-medoids under this environment's numpy: np.argpartition
            # breaks ties among equally central points differently in numpy 1 and 2
            here = _our_metrics().concept_alignment_score(
                [reps[:, j] for j in range(reps.shape[1])], labels
            )
            rows.append((f"{name} CAS, fedstruct under numpy {np.__version__}", "cem", here, ref))
            # cem has no rule for a concept with one state in the test split (a NaN
            # AUC): give it the concepts fedstruct keeps (finite columns)
            purity, oracle_m = arrays[f"{name}_purity"], arrays[f"{name}_oracle"]
            keep = np.flatnonzero(np.isfinite(purity).all(0) & np.isfinite(oracle_m).all(0))
            sub = np.ix_(keep, keep)
            ref = oracle.oracle_impurity_score(
                None, labels[:, keep], purity_matrix=purity[sub], oracle_matrix=oracle_m[sub]
            )
            rows.append((f"{name} OIS (given π, π*)", "cem", ours[name]["ois"], ref))
            if ours[name].get("nis_scalar") is not None:
                np.random.seed(SEED)  # noqa: NPY002  (cem splits with the global generator)
                ref = niching.niche_impurity_score(
                    reps[:, :, 1], labels,
                    predictor_model_fn=lambda n_concepts: MLPClassifier(
                        (20, 20), random_state=SEED, max_iter=1000),
                )  # fmt: skip
                rows.append((f"{name} NIS (p of state 1)", "cem", ours[name]["nis_scalar"], ref))
    try:
        import torch
        from torch_concepts.nn.functional import cace_score, intervention_score
    except ImportError:
        print("pytorch-concepts is not installed here: no PyC rows")
    else:
        for name in MODELS:
            effects = arrays[f"{name}_effects"]  # (m, states, task states)
            for j, c in enumerate(ours[name]["cace"]):
                vec = cace_score(
                    torch.tensor(effects[j, 0][None]), torch.tensor(effects[j, 1][None])
                )
                ref = 0.5 * float(vec.abs().sum())
                rows.append((f"{name} CaCE {c}", "PyC", ours[name]["cace"][c], ref))
            task = arrays[f"{name}_task"]
            for policy, value in ours[name]["intervention_auc"].items():
                steps = arrays[f"{name}_correct_{policy}"]
                calls = iter(range(len(steps)))
                ref = intervention_score(
                    lambda c, steps=steps, calls=calls: torch.tensor(steps[next(calls)]),
                    torch.zeros(len(task), 1), torch.zeros(len(task), 1), torch.tensor(task),
                    [[] for _ in steps], activation=lambda y: y,
                    scorer=lambda t, p, average: float(np.mean(t == p)),
                )  # fmt: skip
                rows.append((f"{name} intervention AUC {policy}", "PyC", value, ref))
    print(f"{'metric':45} {'ref':4} {'fedstruct':>12} {'reference':>12} {'|diff|':>9}")
    for label, lib, a, b in rows:
        print(f"{label:45} {lib:4} {a:12.8f} {b:12.8f} {abs(a - b):9.2e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("step", choices=("save", "check"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cem-src", type=Path, default=None)
    args = parser.parse_args()
    if args.step == "save":
        save(args.out)
    else:
        check(args.out, args.cem_src)


if __name__ == "__main__":
    main()
