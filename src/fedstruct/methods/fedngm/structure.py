"""Local graph recovery (§2.1) and the master's merge function.

Graph recovery is pluggable. The default is scikit-learn's ``GraphicalLassoCV``
(METHODS.md: as accurate as uGLAD on these data, 500x faster) on a documented
transform of mixed data: continuous columns (after the schema's ``log1p`` transform,
if any), each categorical variable one-hot encoded without its most frequent
category (the dropped column is the sum of the others' complement, so keeping it
would make the covariance singular), every column standardised. Two variables are
adjacent when an entry of the precision matrix between their column blocks is
non-zero and, with ``edge_level`` set, its partial correlation passes Drton &
Perlman's (2004) simultaneous Fisher-z test (:func:`partial_correlation_threshold`).
The ``partial`` graph method runs that test on the *sample* partial correlations (the
inverse of the sample correlation matrix, the statistic the test is built for), with
GraphicalLassoCV only the fallback for a singular sample covariance. The
cross-validated penalty is chosen for prediction, not selection, and is small on
thousands of rows: on the 30-variable mixed data each client keeps ~450 of the
~1,770 column pairs and the union of three client graphs has 310 of the 351
possible edges (18 true ones). Nor is it reliable: on seed 2's data
scikit-learn's coordinate descent fails at the small penalties (score -inf) and CV
picks 0.185, which zeroes 15 of the 45 true edges of a client's graph (sample
partial correlations 0.03-0.60 on 8,000 rows). So when a smaller penalty's fit
failed (CV score not finite) and the chosen penalty exceeds the edge test's
threshold (:func:`cv_failed_below`), the graph comes from the test on the sample
partial correlations, as with the ``partial`` method, which runs that test always
(docs/fedngm.md).
A variable the edge test leaves without any neighbour although the data show it is
not independent of the others (some marginal correlation passes the family-wise
Fisher-z test with nothing conditioned on, at the strict ``isolated_level`` = 0.01,
since it overrides the test's verdict; at 0.2 a column of pure noise beside two
correlated ones (two sites of 300 rows) was linked: an isolated node of the
concentration graph is independent of every other variable, so all its marginal
correlations are zero) is linked, with ``isolated="glasso"`` (default), to its
graphical-lasso neighbours among the variables it is marginally dependent on: the
sparse recovery §2.1 names (uGLAD, whose graph is the support of a precision
matrix), kept where the test has no power. That happens when a variable's
information is spread over many collinear columns: breast cancer's diagnosis at
~110 rows a site, partial correlations 0.17-0.29 given the 29 other measurements
against a threshold of 0.30-0.34, marginal correlations up to 0.8
(:func:`correlation_threshold`, :func:`marginal_dependence`). A variable marginally
independent of every other stays isolated (the run warns).
Missing entries (``missing="keep"``): the design keeps them as NaN (a categorical
variable's indicator columns are NaN where it is missing), each column standardised
by its observed values. The correlation matrix is then the pairwise-complete one
(each pair's Pearson correlation on the rows where both are observed, the
available-case estimate of Little & Rubin 2002, §3.4; Kolar & Xing 2012, ICML, use
such pairwise estimates for the graphical lasso), and the graph comes from
Drton & Perlman's test on its partial correlations with ``n`` the smallest pairwise
count (:func:`pairwise_partial_correlations`); ``edge_level`` unset takes
:data:`MISSING_EDGE_LEVEL`. When that matrix is singular or not positive definite
(pairwise estimates need not be), GraphicalLassoCV runs on the design with each
missing entry at its column's mean (0), whose covariance is shrunk toward zero
(a conservative graph). Without missing entries nothing changes.
The NGR alternative fits a Neural Graph Revealer (eq. 5) and keeps the strongest
symmetrised paths.

Merge (§2.1): "the nodes of the graph only contain the intersection of features
present in the clients' graphs [...] the union of all the edges of the local graphs".
With background knowledge, every required pair among those nodes is an edge too: a
direct cause leaves its two variables dependent given any others, so they are
adjacent in every concentration graph that holds both (docs/knowledge.md).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.errors import DataError, ProtocolError
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.undirected import undirected
from fedstruct.methods.fedngm.schema import Schema

if TYPE_CHECKING:
    from sklearn.covariance import GraphicalLassoCV

__all__ = [
    "correlation_threshold",
    "cv_failed_below",
    "glasso_design",
    "glasso_graph",
    "marginal_dependence",
    "merge_graphs",
    "pairwise_partial_correlations",
    "partial_correlation_threshold",
    "sample_partial_correlations",
]

#: A precision entry counts as non-zero above this magnitude.
PRECISION_TOLERANCE = 1e-6


def glasso_design(frame: pd.DataFrame, schema: Schema) -> tuple[NDArray, NDArray[np.int64]]:
    """The transformed design matrix and each column's variable index (module docstring)."""
    blocks, owner = [], []
    for i, spec in enumerate(schema.variables):
        values = frame[spec.name].to_numpy()
        if spec.is_categorical:
            gaps = np.isnan(values.astype(np.float64))
            cats, counts = np.unique(values[~gaps], return_counts=True)
            keep = [c for c in cats if c != cats[np.argmax(counts)]]
            for c in keep:
                column = (values == c).astype(np.float64)
                column[gaps] = np.nan
                blocks.append(column)
                owner.append(i)
        else:
            blocks.append(spec.transformed(values))
            owner.append(i)
    if not blocks:
        return np.zeros((len(frame), 0)), np.zeros(0, dtype=np.int64)
    x = np.column_stack(blocks)
    if not np.isnan(x).any():
        std = x.std(axis=0)
        keep = std > 0
        x = (x[:, keep] - x[:, keep].mean(axis=0)) / std[keep]
        return x, np.asarray(owner, dtype=np.int64)[keep]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column with no observed value
        std = np.nanstd(x, axis=0)
        keep = np.nan_to_num(std) > 0
        x = (x[:, keep] - np.nanmean(x[:, keep], axis=0)) / std[keep]
    return x, np.asarray(owner, dtype=np.int64)[keep]


#: The edge test's family-wise level when the data have missing entries and no
#: ``edge_level`` is set (the pairwise-complete path always tests; module docstring).
MISSING_EDGE_LEVEL = 0.05


def pairwise_partial_correlations(x: NDArray) -> tuple[NDArray[np.float64] | None, int]:
    """Partial correlations of ``x``'s columns (NaN where missing) from their
    pairwise-complete correlation matrix (module docstring), or ``None`` when that
    matrix is singular or not positive definite; and the smallest number of rows on
    which a pair is observed together (the ``n`` of the edge test)."""
    observed = (~np.isnan(x)).astype(np.float64)
    n_min = int((observed.T @ observed).min()) if x.shape[1] else 0
    corr = pd.DataFrame(x).corr(min_periods=3).to_numpy()
    if n_min < x.shape[1] + 2 or not np.all(np.isfinite(corr)):
        return None, n_min
    if np.linalg.eigvalsh(corr).min() <= 0 or np.linalg.cond(corr) > MAX_CONDITION:
        return None, n_min
    precision = np.linalg.inv(corr)
    d = np.sqrt(np.diag(precision))
    return -precision / np.outer(d, d), n_min


def correlation_threshold(n_rows: int, n_columns: int, level: float, conditioned: int) -> float:
    """The smallest ``|correlation|`` given ``conditioned`` other columns that Fisher's
    z test rejects at family-wise ``level`` over all pairs of ``n_columns`` columns:
    ``√(n - c - 3) · |atanh ρ| > Φ⁻¹(1 - level / (2m))``, ``m = p(p - 1)/2``
    (Bonferroni; Drton & Perlman 2004, §3, whose partial correlations condition on the
    ``c = p - 2`` other columns; ``c = 0``: the marginal correlations). 1 (nothing
    passes) when there are too few rows."""
    from scipy.stats import norm

    dof = n_rows - conditioned - 3
    if dof < 1:
        return 1.0
    pairs = max(1, n_columns * (n_columns - 1) // 2)
    z = float(norm.isf(level / (2.0 * pairs)))
    return float(np.tanh(z / np.sqrt(dof)))


def marginal_dependence(corr: NDArray, n_rows: int, level: float) -> NDArray[np.bool_]:
    """Column pairs whose correlation ``corr`` passes the marginal Fisher-z test at
    family-wise ``level`` (:func:`correlation_threshold` with nothing conditioned on)."""
    threshold = correlation_threshold(n_rows, len(corr), level, conditioned=0)
    out = np.abs(np.nan_to_num(corr)) > threshold
    np.fill_diagonal(out, False)
    return out


def partial_correlation_threshold(n_rows: int, n_columns: int, level: float) -> float:
    """The smallest ``|partial correlation|`` that Fisher's z test rejects at family-wise
    ``level`` over all column pairs (Drton & Perlman 2004, §3: ``√(n - p - 1) ·
    |atanh ρ| > Φ⁻¹(1 - level / (2m))`` with ``m = p(p - 1)/2`` pairs, Bonferroni):
    :func:`correlation_threshold` given the ``p - 2`` other columns.

    Returns 1 (nothing passes) when there are too few rows for the test.
    """
    return correlation_threshold(n_rows, n_columns, level, conditioned=n_columns - 2)


#: The sample correlation matrix counts as singular above this condition number.
MAX_CONDITION = 1e8


def sample_partial_correlations(x: NDArray) -> NDArray[np.float64] | None:
    """Sample partial correlations ``-R⁻¹_ij / √(R⁻¹_ii R⁻¹_jj)`` of ``x``'s columns
    (``R`` their correlation matrix; Lauritzen 1996, §5.1.3), or ``None`` when ``R`` is
    singular: fewer rows than columns plus two, or a condition number above
    :data:`MAX_CONDITION`. These are the statistics of Drton & Perlman's (2004) test.
    """
    n, p = x.shape
    if n < p + 2:
        return None
    corr = np.corrcoef(x, rowvar=False)
    if not np.all(np.isfinite(corr)) or np.linalg.cond(corr) > MAX_CONDITION:
        return None
    precision = np.linalg.inv(corr)
    d = np.sqrt(np.diag(precision))
    return -precision / np.outer(d, d)


def cv_failed_below(model: GraphicalLassoCV, threshold: float) -> bool:
    """Whether a fitted ``GraphicalLassoCV`` chose its penalty because the smaller ones
    failed: some smaller penalty's CV score is not finite, and the chosen one exceeds
    ``threshold`` (the edge test's partial correlation), so it can zero edges the
    test would keep (module docstring). Failures below a penalty smaller than the
    threshold (common at α = 0 on nearly collinear columns) do not count.
    """
    scores = np.asarray(model.cv_results_["mean_test_score"], dtype=np.float64)
    alphas = np.asarray(model.cv_results_["alphas"], dtype=np.float64)
    failed = alphas[~np.isfinite(scores)]
    return bool(model.alpha_ > threshold and np.any(failed < model.alpha_))


def glasso_graph(
    frame: pd.DataFrame,
    schema: Schema,
    *,
    cv: int,
    max_rows: int,
    seed: int,
    edge_level: float | None = None,
    sample_partials: bool = False,
    isolated: str = "glasso",
    isolated_level: float = 0.01,
) -> Graph:
    """The conditional-independence graph of ``frame``'s variables by GraphicalLassoCV.

    At most ``max_rows`` rows (a seeded subsample) are used; a variable constant in
    the data gets no edge. With ``edge_level``, a non-zero precision entry counts only
    when its partial correlation ``-P_ij / √(P_ii P_jj)`` exceeds
    :func:`partial_correlation_threshold`. With ``sample_partials`` (the ``partial``
    graph method) the test runs on the sample partial correlations
    (:func:`sample_partial_correlations`) instead, GraphicalLassoCV being only the
    fallback for a singular sample covariance; with ``edge_level`` set the default
    does so too when GraphicalLassoCV's choice is an artefact of failed fits
    (:func:`cv_failed_below`). With ``edge_level`` set and ``isolated="glasso"``, a
    variable the test leaves without a neighbour but which is marginally dependent
    on some other (marginal test at family-wise ``isolated_level``) keeps its
    graphical-lasso neighbours among those (module docstring); ``"none"`` leaves it
    isolated.
    """
    if len(frame) > max_rows:
        rows = np.random.default_rng([int(seed), 13]).choice(len(frame), max_rows, replace=False)
        frame = frame.iloc[np.sort(rows)]
    x, owner = glasso_design(frame, schema)
    v = len(schema)
    adj = np.zeros((v, v), dtype=bool)
    if x.shape[1] >= 2 and np.isnan(x).any():
        return _pairwise_graph(x, owner, schema, cv, edge_level, isolated, isolated_level)
    if x.shape[1] >= 2:
        threshold = None
        if edge_level is not None:
            threshold = partial_correlation_threshold(len(x), x.shape[1], edge_level)
        testable = threshold is not None
        partial = sample_partial_correlations(x) if sample_partials and testable else None
        model = None
        if partial is None:
            model = _glasso_fit(x, cv, [schema.names[k] for k in owner])
            if testable and cv_failed_below(model, threshold):
                partial = sample_partial_correlations(x)
        if partial is None:
            nz = _support(model)
            d = np.sqrt(np.diag(model.precision_))
            partial = -model.precision_ / np.outer(d, d)
        else:
            nz = np.ones_like(partial, dtype=bool)
        if testable:
            nz &= np.abs(partial) > threshold
        adj = _variable_adjacency(nz, owner, len(schema))
        if testable and isolated == "glasso":
            corr = np.corrcoef(x, rowvar=False)
            marginal = marginal_dependence(corr, len(x), isolated_level)
            adj = _link_isolated(
                adj,
                owner,
                marginal,
                lambda: (
                    model
                    if model is not None
                    else _glasso_fit(x, cv, [schema.names[k] for k in owner])
                ),
            )
    return undirected(schema.names, adj)


def _glasso_fit(x: NDArray, cv: int, labels: Sequence[str]) -> GraphicalLassoCV:
    """GraphicalLassoCV fitted to the design ``x`` (solver warnings silenced).

    Raises
    ------
    DataError
        When the solver fails on (nearly) collinear columns, naming the most correlated
        pair (``labels``: each column's variable).
    """
    from sklearn.covariance import GraphicalLassoCV

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return GraphicalLassoCV(cv=cv, max_iter=200).fit(x)
        except FloatingPointError:
            with np.errstate(invalid="ignore", divide="ignore"):
                corr = np.abs(np.nan_to_num(np.corrcoef(x, rowvar=False)))
            np.fill_diagonal(corr, 0.0)
            a, b = np.unravel_index(int(np.argmax(corr)), corr.shape)
            raise DataError(
                f"the graph step cannot fit a graphical lasso to the sites' columns: "
                f"{labels[a]!r} and {labels[b]!r} are nearly copies of each other "
                f"(correlation {corr[a, b]:.4f}); drop one of them, or give a graph "
                "(--graph FILE)"
            ) from None


def _support(model: GraphicalLassoCV) -> NDArray[np.bool_]:
    """The non-zero entries of a fitted graphical lasso's precision matrix."""
    return np.abs(model.precision_) > PRECISION_TOLERANCE


def _variable_adjacency(
    nz: NDArray[np.bool_], owner: NDArray[np.int64], n_variables: int
) -> NDArray[np.bool_]:
    """Variables adjacent when any entry of ``nz`` between their column blocks is set."""
    nz = nz.copy()
    np.fill_diagonal(nz, False)
    adj = np.zeros((n_variables, n_variables), dtype=bool)
    rows, cols = np.nonzero(nz)
    adj[owner[rows], owner[cols]] = True
    np.fill_diagonal(adj, False)
    return adj


def _link_isolated(
    adj: NDArray[np.bool_],
    owner: NDArray[np.int64],
    marginal: NDArray[np.bool_],
    fitted: Callable[[], GraphicalLassoCV],
) -> NDArray[np.bool_]:
    """``adj`` with each variable the edge test left without a neighbour, but which
    the marginal test finds dependent on some other (``marginal``: column pairs whose
    correlation passes :func:`correlation_threshold` with nothing conditioned on),
    linked to its graphical-lasso neighbours among those it is marginally dependent
    on (``isolated="glasso"``, module docstring). ``fitted`` returns the fitted
    GraphicalLassoCV; it is called only when some variable qualifies."""
    present = np.zeros(len(adj), dtype=bool)
    present[owner] = True
    dependent = _variable_adjacency(marginal, owner, len(adj))
    lonely = present & ~adj.any(axis=1) & dependent.any(axis=1)
    if not lonely.any():
        return adj
    added = _variable_adjacency(_support(fitted()), owner, len(adj)) & dependent
    added &= lonely[:, None] | lonely[None, :]
    return adj | added


def _pairwise_graph(
    x: NDArray,
    owner: NDArray[np.int64],
    schema: Schema,
    cv: int,
    edge_level: float | None,
    isolated: str,
    isolated_level: float,
) -> Graph:
    """:func:`glasso_graph` on a design with missing entries (module docstring)."""
    level = MISSING_EDGE_LEVEL if edge_level is None else edge_level
    partial, n_min = pairwise_partial_correlations(x)
    threshold = partial_correlation_threshold(n_min, x.shape[1], level)
    model = None
    labels = [schema.names[k] for k in owner]
    if partial is None:
        model = _glasso_fit(np.nan_to_num(x), cv, labels)
        d = np.sqrt(np.diag(model.precision_))
        partial = np.where(_support(model), -model.precision_ / np.outer(d, d), 0)
    adj = _variable_adjacency(np.abs(partial) > threshold, owner, len(schema))
    if isolated == "glasso":
        corr = pd.DataFrame(x).corr(min_periods=3).to_numpy()
        marginal = marginal_dependence(corr, n_min, isolated_level)
        adj = _link_isolated(
            adj, owner, marginal,
            lambda: model if model is not None else _glasso_fit(np.nan_to_num(x), cv, labels),
        )  # fmt: skip
    return undirected(schema.names, adj)


def merge_graphs(graphs: Sequence[Graph], required: Sequence[tuple[str, str]] = ()) -> Graph:
    """The master's merge (§2.1): nodes = the intersection of the graphs' nodes (in
    the first graph's order), edges = the union of their edges among those nodes,
    plus the ``required`` pairs (background knowledge) between two of them.

    Raises
    ------
    ProtocolError
        If no graph is given or the graphs share fewer than two nodes.
    """
    if not graphs:
        raise ProtocolError("no client graph to merge")
    common = [n for n in graphs[0].names if all(n in g for g in graphs[1:])]
    if len(common) < 2:
        raise ProtocolError(
            f"the clients' graphs share {len(common)} variable(s); a global model needs at "
            "least two common variables"
        )
    adj = np.zeros((len(common), len(common)), dtype=bool)
    for g in graphs:
        adj |= g.restrict(common).adjacency()
    position = {name: k for k, name in enumerate(common)}
    for x, y in required:
        if x in position and y in position:
            adj[position[x], position[y]] = adj[position[y], position[x]] = True
    return undirected(common, adj)
