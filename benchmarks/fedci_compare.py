"""fedstruct's pooled CI tests against fedCI's federated likelihood-ratio tests (issue 50,
target 5, "Against fedCI").

Usage: ``PYTHONPATH=src python benchmarks/fedci_compare.py [--graphs 10] [--full]
[--pags 100randomPAGs.RData] [--python python3.12] [--seed 0] [--alpha 0.05]
[--keep DIR] [--out FILE]``

fedCI (Hahn et al., "fedCI-IOD", arXiv 2603.05149; PyPI ``python-fedci``) runs in its own
virtual environment, ``benchmarks/.venv-fedci`` (git-ignored), which this script makes
on first use with a Python of at least 3.12 (fedCI 0.2.4's floor) and ``pip install
python-fedci==0.2.4``; fedCI is never a dependency of fedstruct. The two sides exchange
CSV and JSON files in a temporary folder (benchmarks/fedci_side.py runs fedCI).

The data follow fedCI's own evaluation protocol (benchmarks/fedci_protocol.py): per graph
one of its 100 random 5-variable PAGs with its two variable subsets (``--pags``: the
``100randomPAGs.RData`` of maxhahn/fedci, ``git show 33243ca^:100randomPAGs.RData``;
without it random MAGs drawn the same way), mixed kinds, ``n`` in {1,000, 2,000} rows
over {3, 5} sites with overlapping variable sets; graph ``g`` takes the ``g % 4``-th of
these four settings. Every one of the 80 tests fedCI's ``Server.run`` runs on a graph
(each pair, every conditioning set of the other three variables) is answered

- by fedCI (package defaults: no masking), with its server-site round trips and CPU time;
- by fedstruct's conditional-Gaussian (``cg``) and degenerate-Gaussian (``dg``) tests on
  the sites' rows concatenated (``make_ci_test``, test-wise deletion: a site's missing
  column is a block of missing values), CPU time per test;
- by the federated path: a ``PooledTest`` over every site's ``site_statistics``, one
  exchange per conditioning-set size (every test of a level in one batch), whose p-values
  must equal the one-process ones;

and per graph ``FedFCI`` (``ci_test=cg``, FCI, ``min_sites=1`` as fedCI pools whatever sites
measure a test's variables) runs on the sites, its exchanges counted and its PAG compared
with one-process FCI on the concatenated rows, and again with its defaults (``min_sites=2``:
the pairs it leaves undecided). Reported: how often fedCI's decision (``p > alpha``:
independent) agrees with each fedstruct test's, the round trips and CPU time per test,
and fedCI's statistic per response kind. An ordinal response's statistic comes out
negative (p = 1): 0.2.4's ordinal log-likelihood pairs the indicator of the last level
with the probability of the first (fedci_side.py's ``--ordinal-check``, run here on
synthetic data, compares it with the levels aligned).

Default: 10 graphs (a few minutes on 2 shared cores); ``--full``: the protocol's 100.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
from fedci_protocol import SAMPLES, SITES, Federation, draw_federation, random_setups, read_setups
from scipy.stats import spearmanr

from fedstruct.data import ClientData
from fedstruct.discovery import fci, make_ci_test
from fedstruct.discovery.citest import ci_key
from fedstruct.discovery.pooled import PooledSites, PooledTest
from fedstruct.discovery.statistics import Frame, Plan, SiteTable, site_statistics
from fedstruct.methods.fedfci import FedFCI

HERE = Path(__file__).resolve().parent
VENV = HERE / ".venv-fedci"
FEDCI = "python-fedci==0.2.4"
NO_PYTHON = (
    "fedCI 0.2.4 needs Python >= 3.12 and none was found: install one (e.g. `pyenv install "
    "3.12`) and pass --python /path/to/python3.12"
)
#: fedstruct's kind of each protocol kind (ordinal codes are scores in cg and dg).
KIND = {
    "continuous": "continuous",
    "binary": "categorical",
    "nominal": "categorical",
    "ordinal": "ordinal",
}
TESTS = ("cg", "dg")
#: fedCI's process computes on one thread (its CPU time: every site's and the server's).
ONE_THREAD = {
    v: "1"
    for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "POLARS_MAX_THREADS")
}


# ------------------------------------------------------------------ fedCI's environment
def _version(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    major, minor = out.split()
    return int(major), int(minor)


def find_python(given: str | None) -> str:
    """A Python >= 3.12: ``given`` (only), else one on PATH, else one of pyenv's."""
    if given:
        candidates = [given]
    else:
        candidates = [shutil.which(f"python3.{m}") for m in (12, 13, 14)]
        pyenv = "~/.pyenv/versions/3.1[2-9]*/bin/python3"
        candidates += sorted(glob.glob(os.path.expanduser(pyenv)))
    for python in candidates:
        if python and (_version(python) or (0, 0)) >= (3, 12):
            return python
    print(NO_PYTHON, file=sys.stderr)
    sys.exit(2)


def fedci_python(given: str | None) -> Path:
    """``benchmarks/.venv-fedci``'s interpreter, the environment made and fedCI installed
    there on first use."""
    python = VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([find_python(given), "-m", "venv", str(VENV)], check=True)
    probe = "import importlib.metadata as m; print(m.version('python-fedci'))"
    found = subprocess.run([python, "-c", probe], capture_output=True, text=True)
    if found.stdout.strip() != FEDCI.split("==")[1]:
        pip = subprocess.run([python, "-m", "pip", "install", "--quiet", FEDCI])
        if pip.returncode:
            print(f"`pip install {FEDCI}` failed in {VENV} (pip's message above)", file=sys.stderr)
            sys.exit(2)
    return python


# ------------------------------------------------------------------ the federations
def _fedci_column(values: np.ndarray, kind: str) -> list[object]:
    """A column as the protocol hands it to fedCI: binary ``level == "A"``, ordinal
    ``1..4``, nominal ``"A".."D"``, continuous as is."""
    if kind == "binary":
        return ["true" if v == 0 else "false" for v in values]
    if kind == "ordinal":
        return [int(v) + 1 for v in values]
    if kind == "nominal":
        return ["ABCD"[int(v)] for v in values]
    return [repr(float(v)) for v in values]


def write_federation(folder: Path, g: int, fed: Federation) -> dict[str, object]:
    """Each site's CSV for fedCI; the job entry naming them."""
    files = []
    for k, site in enumerate(fed.sites):
        name = f"g{g:03d}_site{k}.csv"
        frame = pd.DataFrame({c: _fedci_column(v, fed.kinds[c]) for c, v in site.items()})
        frame.to_csv(folder / name, index=False)
        files.append(name)
    return {"id": g, "kinds": fed.kinds, "sites": files}


def fedstruct_sites(fed: Federation, names: tuple[str, ...]) -> list[pd.DataFrame]:
    """Each site's table as fedstruct reads it: categorical and ordinal columns as dense
    codes over the levels seen anywhere, continuous ones as numbers."""
    seen = {
        v: np.unique(np.concatenate([s[v] for s in fed.sites if v in s]))
        for v in names
        if fed.levels[v] > 1
    }
    out = []
    for site in fed.sites:
        columns = {}
        for v in names:
            if v not in site:
                continue
            if v in seen:
                columns[v] = np.searchsorted(seen[v], site[v]).astype(np.int64)
            else:
                columns[v] = site[v].astype(np.float64)
        out.append(pd.DataFrame(columns))
    return out


def concatenated(sites: list[pd.DataFrame], names: tuple[str, ...]) -> pd.DataFrame:
    """The sites' rows one under another, every variable of ``names`` in that order (a
    site's missing column: missing values)."""
    return pd.concat(sites, ignore_index=True).reindex(columns=list(names))


# ------------------------------------------------------------------ fedstruct's answers
def one_process(pooled: pd.DataFrame, kinds: dict[str, str], keys: list, test: str) -> dict:
    """Each test's p-value on the concatenated rows, and the CPU time of all of them."""
    cpu = time.process_time()
    ci = make_ci_test(pooled, test, kinds=kinds)
    p = [ci.query(*key)[0] for key in keys]
    return {"p": p, "cpu_s": time.process_time() - cpu}


def federated(
    sites: list[pd.DataFrame], names: tuple[str, ...], kinds: dict[str, str], keys: list, test: str
) -> dict:
    """Each test's p-value from summed site statistics (one exchange per level), the
    exchanges and the CPU time of the sites' and the server's work."""
    cpu = time.process_time()
    pooled = concatenated(sites, names)
    discrete = tuple(kinds[v] == "categorical" for v in names)
    cards = tuple(
        int(pooled[v].max()) + 1 if d else 1 for v, d in zip(names, discrete, strict=True)
    )
    centre = tuple(
        0.0 if d else float(pooled[v].mean()) for v, d in zip(names, discrete, strict=True)
    )
    scale = tuple(
        1.0 if d else float(pooled[v].std(ddof=0)) for v, d in zip(names, discrete, strict=True)
    )
    frame = Frame(names, discrete, cards, centre, scale)
    measured = np.array([[v in s.columns for v in names] for s in sites])
    rows = np.array([len(s) for s in sites], dtype=np.int64)
    pooled_test = PooledTest(
        frame, PooledSites(measured, rows, measured.all(axis=0)), test, min_sites=1
    )
    tables = [SiteTable(s, frame, min_rows=1) for s in sites]
    exchanges = 0
    for level in sorted({len(key[2]) for key in keys}):
        for key in keys:
            if len(key[2]) == level:
                pooled_test.query_key(key)
        requests = pooled_test.pending()
        if requests:
            plan = Plan(frame, requests)
            replies = [site_statistics(t, plan) for t in tables]
            counts = np.sum([c for c, _ in replies], axis=0)
            sums = np.sum([s for _, s in replies], axis=0)
            pooled_test.absorb_statistics(plan, counts, sums)
            exchanges += 1
        pooled_test.start_search()
    p = [pooled_test.query_key(key)[0] for key in keys]
    return {"p": p, "exchanges": exchanges, "cpu_s": time.process_time() - cpu}


def fedfci_run(sites: list[pd.DataFrame], kinds: dict[str, str], alpha: float) -> dict:
    """FedFCI (cg, FCI, tests of one site allowed as fedCI allows them) over the sites
    against FCI on their concatenated rows (same variable order); and FedFCI with its
    defaults (``min_sites`` 2, ``ci_test=auto``): the pairs it leaves undecided."""
    clients = [ClientData(f"site{k}", s) for k, s in enumerate(sites)]
    model = FedFCI(kinds=kinds, ci_test="cg", alpha=alpha, min_sites=1, min_contribution_rows=1)
    model.fit(clients)
    with warnings.catch_warnings():
        # a test of a pair no site measures together has no row: skipped, after numpy's
        # empty-slice warnings in the one-process conditional-Gaussian test
        warnings.simplefilter("ignore", RuntimeWarning)
        # in FedFCI's variable order (the sites' columns as first met): which separating
        # set a search finds first depends on the order, in one process as in a federation
        order = tuple(model.graph_.names)
        local = fci(make_ci_test(concatenated(sites, order), "cg", kinds=kinds), alpha=alpha)
    default = FedFCI(kinds=kinds, alpha=alpha).fit(clients)  # min_sites 2, auto test
    undecided = {tuple(sorted(pair)) for pair in model.undecided_}
    theirs = {k: v for k, v in _edges(local.graph).items() if k not in undecided}
    return {
        "exchanges": model.exchanges_,
        "tests": model.n_tests_,
        "undecided": len(undecided),
        "same_pag": _edges(model.graph_) == theirs,
        "default_undecided": len(default.undecided_),
        "default_test": default.ci_test_,
    }


def _edges(graph: object) -> dict[tuple[str, str], tuple[int, int]]:
    names, marks = graph.names, graph.marks  # type: ignore[attr-defined]
    return {
        tuple(sorted((names[a], names[b]))): (
            (int(marks[a, b]), int(marks[b, a]))
            if names[a] < names[b]
            else (int(marks[b, a]), int(marks[a, b]))
        )
        for a in range(len(names))
        for b in range(a + 1, len(names))
        if marks[a, b]
    }


# ------------------------------------------------------------------ the report
def summarise(records: list[dict], graphs: list[dict], alpha: float) -> dict:
    """The figures of the module docstring over every test of every graph (agreement,
    round trips and CPU time over the tests some site can answer)."""
    df = pd.DataFrame(records)
    tested = df[df["sites_measuring"] > 0]
    out: dict[str, object] = {
        "graphs": len(graphs),
        "tests": len(df),
        "tests_no_site": int((df["sites_measuring"] == 0).sum()),
        "tests_fedci_unanswered": int(df["p_fedci"].isna().sum()),
        "tests_one_site_only": int((df["sites_measuring"] == 1).sum()),
    }
    answered = tested[tested["p_fedci"].notna()]
    fed_indep = answered["p_fedci"] > alpha
    ordinal = answered["ordinal_xy"]
    several = answered["sites_measuring"] >= 2
    for test in TESTS:
        agree = fed_indep == (answered[f"p_{test}"] > alpha)
        out[f"agreement_{test}"] = float(agree.mean())
        out[f"agreement_{test}_two_sites_or_more"] = float(agree[several].mean())
        out[f"agreement_{test}_no_ordinal_xy"] = float(agree[~ordinal].mean())
        out[f"agreement_{test}_ordinal_xy"] = (
            float(agree[ordinal].mean()) if ordinal.any() else None
        )
        if ordinal.any():
            categories = answered.loc[ordinal, f"p_{test}_ordinal_categorical"] > alpha
            out[f"agreement_{test}_ordinal_xy_read_as_categories"] = float(
                (fed_indep[ordinal] == categories).mean()
            )
        out[f"spearman_{test}"] = float(
            spearmanr(answered["p_fedci"], answered[f"p_{test}"]).statistic
        )
        local, remote = tested[f"p_{test}"], tested[f"p_{test}_federated"]
        out[f"max_abs_diff_federated_{test}"] = float((remote - local).abs().max())
        out[f"same_decisions_federated_{test}"] = float(
            ((remote > alpha) == (local > alpha)).mean()
        )
    rounds = answered["rounds"]
    out["rounds_per_test"] = {
        "mean": float(rounds.mean()),
        "median": float(rounds.median()),
        "p90": float(rounds.quantile(0.9)),
        "max": int(rounds.max()),
    }
    calls = pd.DataFrame(list(answered["rounds_by_call"])).fillna(0)
    out["rounds_by_call_mean"] = {k: float(v) for k, v in calls.mean().items()}
    out["fedci_tests_with_warnings"] = int((answered["fedci_warnings"] > 0).sum())
    out["fedci_cpu_per_test_s"] = float(answered["cpu_fedci"].mean())
    out["fedci_cpu_per_graph_s"] = float(df.groupby("graph")["cpu_fedci"].sum().mean())
    g = pd.DataFrame(graphs)
    for test in TESTS:
        out[f"{test}_cpu_per_test_s"] = float(g[f"cpu_{test}"].sum() / len(tested))
        out[f"{test}_federated_cpu_per_test_s"] = float(
            g[f"cpu_{test}_federated"].sum() / len(tested)
        )
    out["exchanges_per_graph"] = float(g["exchanges_cg"].mean())
    out["fedfci"] = {
        "exchanges_mean": float(g["fedfci_exchanges"].mean()),
        "exchanges_max": int(g["fedfci_exchanges"].max()),
        "tests_mean": float(g["fedfci_tests"].mean()),
        "undecided_pairs": int(g["fedfci_undecided"].sum()),
        "same_pag_as_one_process_outside_undecided": int(g["fedfci_same_pag"].sum()),
        "defaults_undecided_pairs": int(g["fedfci_default_undecided"].sum()),
        "defaults_test": dict(Counter(g["fedfci_default_test"])),
    }
    out["draws_per_accepted_federation"] = float(g["tries"].mean())
    out["kinds"] = dict(Counter(k for kinds in g["kinds"] for k in kinds.values()))
    directions = pd.DataFrame(
        [d for _, r in answered.iterrows() for d in (r["forward"], r["backward"])]
    )
    per_kind = {}
    for kind, part in directions.groupby("kind"):
        per_kind[str(kind)] = {
            "directions": len(part),
            "negative_statistic": float((part["statistic"] < 0).mean()),
            "p_equal_1": float((part["p"] >= 1.0).mean()),
        }
    out["fedci_response_statistic"] = per_kind
    settings = {}
    for (n, sites), part in answered.groupby(["n", "sites"]):
        agree = (part["p_fedci"] > alpha) == (part["p_cg"] > alpha)
        settings[f"n={n}, sites={sites}"] = {
            "tests": len(part),
            "agreement_cg": float(agree.mean()),
            "rounds_mean": float(part["rounds"].mean()),
            "fedci_cpu_per_test_s": float(part["cpu_fedci"].mean()),
        }
    out["by_setting"] = settings
    return out


def ordinal_summary(found: dict, alpha: float) -> dict:
    """fedci_side.py's ``--ordinal-check``: per likelihood (as shipped, levels aligned)
    the negative statistics of the ordinal-response direction and the dependent and
    independent repeats its own p-value and the symmetric test's call dependent."""
    dependent = np.array(found["dependent"])
    out = {"repeats": len(dependent)}
    for name in ("shipped", "aligned"):
        runs = found[name]
        own = np.array([r["p_x_response"] <= alpha for r in runs])
        both = np.array([r["p"] <= alpha for r in runs])
        out[name] = {
            "negative_statistic": int(sum(r["statistic"] < 0 for r in runs)),
            "ordinal_direction_rejects": {
                "dependent": int(own[dependent].sum()),
                "independent": int(own[~dependent].sum()),
            },
            "symmetric_test_rejects": {
                "dependent": int(both[dependent].sum()),
                "independent": int(both[~dependent].sum()),
            },
        }
    return out


def headline(out: dict, alpha: float) -> str:
    """The summary's main figures in a few lines (the whole summary follows as JSON)."""
    r, f, c = out["rounds_per_test"], out["fedfci"], out["fedci_cpu_per_test_s"]
    tested = out["tests"] - out["tests_no_site"]
    return "\n".join(
        [
            f"{out['graphs']} graphs, {tested} tests some site can answer "
            f"({out['tests_no_site']} that none can: fedCI returns no p-value)",
            f"decisions agree at alpha = {alpha}: fedCI vs cg {out['agreement_cg']:.1%}, "
            f"vs dg {out['agreement_dg']:.1%}",
            f"federated = one process: max |dp| cg {out['max_abs_diff_federated_cg']:.1e}, "
            f"dg {out['max_abs_diff_federated_dg']:.1e}",
            f"fedCI round trips per test: mean {r['mean']:.0f}, median {r['median']:.0f}, "
            f"max {r['max']}; fedstruct: {out['exchanges_per_graph']:.1f} exchanges per "
            f"graph's tests, {f['exchanges_mean']:.1f} per FedFCI run",
            f"CPU per test: fedCI {c:.3f} s, fedstruct cg {out['cg_cpu_per_test_s'] * 1e3:.2f} ms"
            f" (federated path {out['cg_federated_cpu_per_test_s'] * 1e3:.2f} ms)",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graphs", type=int, default=10, help="graphs (default 10)")
    parser.add_argument("--full", action="store_true", help="the protocol's 100 graphs")
    parser.add_argument("--pags", type=Path, help="fedCI's 100randomPAGs.RData")
    parser.add_argument("--python", help="a Python >= 3.12 for fedCI's environment")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument(
        "--keep",
        type=Path,
        help="keep the exchange folder here (default: a temporary one); fedCI's answers "
        "found there for the same job are read back, not computed again",
    )
    parser.add_argument("--out", type=Path, help="write the summary and every test as JSON")
    args = parser.parse_args()
    count = 100 if args.full else args.graphs
    python = fedci_python(args.python)

    if args.pags is not None:
        setups = read_setups(args.pags)[:count]
    else:
        print("no --pags: random MAGs as FCI.Utils draws them, not fedCI's 100 PAGs")
        setups = random_setups(count, args.seed)
    rng = np.random.default_rng(args.seed)
    settings = [(n, k) for k in SITES for n in SAMPLES]
    feds = [draw_federation(s, *settings[g % len(settings)], rng) for g, s in enumerate(setups)]

    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        job = json.dumps({"graphs": [write_federation(folder, g, f) for g, f in enumerate(feds)]})
        done = folder / "fedci.json"
        if not (done.exists() and (folder / "job.json").read_text() == job):
            done.unlink(missing_ok=True)
            (folder / "job.json").write_text(job)
            env = {**os.environ, **ONE_THREAD}
            subprocess.run([python, str(HERE / "fedci_side.py"), str(folder)], check=True, env=env)
        answers = json.loads(done.read_text())
        if not (folder / "ordinal.json").exists():
            side = [python, str(HERE / "fedci_side.py"), "--ordinal-check", str(folder)]
            subprocess.run(side, check=True, env={**os.environ, **ONE_THREAD})
        ordinal = json.loads((folder / "ordinal.json").read_text())

    records, graphs = [], []
    for g, (setup, fed, result) in enumerate(zip(setups, feds, answers["graphs"], strict=True)):
        names = setup.names
        kinds = {v: KIND[fed.kinds[v]] for v in names}
        sites = fedstruct_sites(fed, names)
        pooled = concatenated(sites, names)
        index = {v: k for k, v in enumerate(names)}
        tests = result["tests"]
        measuring = [
            sum(all(v in s.columns for v in (t["x"], t["y"], *t["s"])) for s in sites)
            for t in tests
        ]
        asked = [k for k, m in enumerate(measuring) if m]  # no site: no row to test
        keys = [
            ci_key(index[t["x"]], index[t["y"]], [index[v] for v in t["s"]])
            for t in (tests[k] for k in asked)
        ]
        graph: dict[str, object] = {"graph": g, "kinds": fed.kinds, "tries": fed.tries}
        answers_of = {}
        for test in TESTS:
            local = one_process(pooled, kinds, keys, test)
            remote = federated(sites, names, kinds, keys, test)
            answers_of[test] = (
                dict(zip(asked, local["p"], strict=True)),
                dict(zip(asked, remote["p"], strict=True)),
            )
            graph[f"cpu_{test}"] = local["cpu_s"]
            graph[f"cpu_{test}_federated"] = remote["cpu_s"]
            graph[f"exchanges_{test}"] = remote["exchanges"]
            # ordinal levels as categories, as fedCI's predictors read them (dummies)
            nominal = {v: "categorical" if k == "ordinal" else k for v, k in kinds.items()}
            categories = one_process(pooled, nominal, keys, test)["p"]
            answers_of[f"{test}_ordinal_categorical"] = dict(zip(asked, categories, strict=True))
        run = fedfci_run(sites, kinds, args.alpha)
        graph.update({f"fedfci_{k}": v for k, v in run.items()})
        graphs.append(graph)
        n, n_sites = settings[g % len(settings)]
        for k, t in enumerate(tests):
            record = {
                "graph": g,
                "n": n,
                "sites": n_sites,
                "x": t["x"],
                "y": t["y"],
                "s": t["s"],
                "p_fedci": t["p"],
                "forward": t["forward"],
                "backward": t["backward"],
                "rounds": t["rounds"],
                "rounds_by_call": t["rounds_by_call"],
                "cpu_fedci": t["cpu_s"],
                "fedci_warnings": t["warnings"],
                "sites_measuring": measuring[k],
                "ordinal_xy": "ordinal" in (fed.kinds[t["x"]], fed.kinds[t["y"]]),
            }
            for test in TESTS:
                record[f"p_{test}"] = answers_of[test][0].get(k)
                record[f"p_{test}_federated"] = answers_of[test][1].get(k)
                record[f"p_{test}_ordinal_categorical"] = answers_of[
                    f"{test}_ordinal_categorical"
                ].get(k)
            records.append(record)
        print(f"fedstruct: graph {g + 1}/{len(setups)}", file=sys.stderr, flush=True)

    summary = summarise(records, graphs, args.alpha)
    summary["fedci"] = {k: v for k, v in answers.items() if k != "graphs"}
    summary["ordinal_check"] = ordinal_summary(ordinal, args.alpha)
    summary["pags"] = "fedCI's 100randomPAGs.RData" if args.pags else "random MAGs"
    print(headline(summary, args.alpha))
    print(json.dumps(summary, indent=2))
    if args.out is not None:
        args.out.write_text(json.dumps({"summary": summary, "tests": records}, default=str))


if __name__ == "__main__":
    main()
