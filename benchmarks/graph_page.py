"""How fast the HTML page of a large graph opens and answers a search (issue 51, target 6).

Usage: ``python benchmarks/graph_page.py [--network munin] [--latent 50] [--repeats 5]``

For a bundled network's DAG, and its PAG with ``--latent`` variables hidden (drawn with
seed 0; ``dag_to_pag``), writes the page (``write_graph_page``, as ``fedstruct show DIR
--html PAGE`` does) and opens it ``--repeats`` times in headless chromium
(``--dump-dom``) for each of: the overview (the map of clusters), a search for the most
connected variable at depth 1 and at depth 2 (``#search=NAME&depth=D``). Reports the
medians of

- ``page ms``: the page's own clock when its view was drawn and its state written
  (``performance.now()``: from the start of the navigation, so parsing the page,
  Cytoscape.js and the graph's JSON, the search, the layout), and
- ``browser s``: the wall time of the whole chromium process, its start-up and exit
  included (an upper bound on what a reader waits for), and ``CPU s``: the CPU time
  of all its processes (less sensitive to a busy machine than the wall times);

and the size of the page and what it drew.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import numpy as np

from fedstruct.data import load_network
from fedstruct.graphs import Graph, dag_to_pag
from fedstruct.results.graph_page import write_graph_page


def open_page(chromium: str, url: str, scratch: Path) -> tuple[dict, float, float]:
    """The page's state, the browser's wall and CPU seconds for one visit of ``url``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    env = {"HOME": str(scratch), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={scratch / 'profile'}", "--dump-dom", url],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    found = re.search(r'<pre id="page-state">(.*?)</pre>', done.stdout, re.S)
    if found is None:
        sys.exit(f"no page state in chromium's output: {done.stderr[-500:]}")
    state = json.loads(html.unescape(found.group(1)))
    if state["errors"] or state["warnings"] or not state["ready"]:
        sys.exit(f"the page failed: {state}")
    return state, seconds, cpu


def measure(chromium: str, graph: Graph, label: str, repeats: int, scratch: Path) -> None:
    """Write ``graph``'s page and time its views (one table row each)."""
    start = time.perf_counter()
    page = write_graph_page(graph, scratch / "page.html", title=label)
    print(f"{label}: {graph.n_nodes} variables, {graph.n_edges} edges; page written in "
          f"{time.perf_counter() - start:.1f} s, {page.stat().st_size / 1e6:.2f} MB")  # fmt: skip
    hub = graph.names[int(np.argmax(graph.adjacency().sum(axis=0)))]
    views = [("overview", ""), (f"search {hub}, depth 1", f"search={quote(hub)}&depth=1"),
             (f"search {hub}, depth 2", f"search={quote(hub)}&depth=2")]  # fmt: skip
    for view, fragment in views:
        url = page.resolve().as_uri() + ("#" + fragment if fragment else "")
        visits = [open_page(chromium, url, scratch) for _ in range(repeats)]
        state = visits[-1][0]
        laid = statistics.median(v[0]["ms"] for v in visits)
        painted = statistics.median(v[0]["clock"].get("painted", float("nan")) for v in visits)
        wall = statistics.median(v[1] for v in visits)
        cpu = statistics.median(v[2] for v in visits)
        print(f"  {view:38s} {laid:8.0f} {painted:11.0f} {wall:10.2f} {cpu:6.2f} "
              f"{state['nodes']:6d} {state['edges']:6d} {state['left_out']:8d}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", default="munin")
    parser.add_argument("--latent", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("needs chromium (apt-get install chromium)")
    dag = load_network(args.network).graph
    rng = np.random.default_rng(0)
    hidden = [dag.names[i] for i in rng.choice(dag.n_nodes, args.latent, replace=False)]
    start = time.perf_counter()
    pag = dag_to_pag(dag, hidden)
    print(f"(the PAG took {time.perf_counter() - start:.1f} s)")
    print(f"  {'view':38s} {'laid ms':>8s} {'painted ms':>11s} {'browser s':>10s} "
          f"{'CPU s':>6s} {'nodes':>6s} {'edges':>6s} {'left out':>8s}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="fedstruct-page-") as folder:
        measure(chromium, dag, f"{args.network} DAG", args.repeats, Path(folder))
        label = f"{args.network} PAG, {args.latent} variables hidden"
        measure(chromium, pag, label, args.repeats, Path(folder))


if __name__ == "__main__":
    main()
