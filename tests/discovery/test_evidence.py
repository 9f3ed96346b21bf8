"""A CI test's evidence per row: a bootstrap resample's rows count half a row each."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedstruct.data import ClientData
from fedstruct.data.client import RESAMPLE_EVIDENCE
from fedstruct.discovery.build import make_ci_test
from fedstruct.errors import ConfigError, DataError

ALPHA = 0.05


def mixed_rows(n: int, seed: int = 0) -> pd.DataFrame:
    """Codes ``a``, ``b`` (b depends on a), a number ``x`` depending on ``b``, and ``c``."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = np.where(rng.random(n) < 0.3, a, rng.integers(0, 3, n))
    c = rng.integers(0, 2, n)
    x = 0.4 * b + rng.normal(size=n)
    y = 0.3 * x + rng.normal(size=n)
    return pd.DataFrame({"a": a, "b": b, "c": c, "x": x, "y": y})


@pytest.mark.parametrize(
    ("test", "columns"),
    [
        ("g2", ["a", "b", "c"]),
        ("chi2", ["a", "b", "c"]),
        ("cg", ["a", "b", "c", "x", "y"]),
        ("dg", ["a", "b", "c", "x", "y"]),
    ],
)
def test_every_row_twice_at_half_evidence_gives_the_rows_own_p_values(
    test: str, columns: list[str]
) -> None:
    # Every row twice doubles the counts (and the log-likelihoods) that the statistic
    # is made of: at half a row of evidence each, the p-values are those of the rows.
    rows = mixed_rows(300)[columns]
    twice = pd.concat([rows, rows], ignore_index=True)
    own = make_ci_test(rows, test, small_sample="none")
    halved = make_ci_test(twice, test, small_sample="none", evidence=0.5)
    plain = make_ci_test(twice, test, small_sample="none")
    tested = [(0, 1, ()), (0, 2, (1,)), (1, 2, ()), (0, 1, (2,))]
    if len(columns) == 5:  # with numbers: given codes, a number given codes
        tested += [(0, 4, (1, 2)), (3, 4, (2,))]
    for i, j, z in tested:
        assert halved.pvalue(i, j, z) == pytest.approx(own.pvalue(i, j, z), rel=1e-6, abs=1e-12)
    # Not a no-op: counted as new evidence, the repeated rows give smaller p-values.
    assert plain.pvalue(0, 2, (1,)) < own.pvalue(0, 2, (1,))


def test_fisher_z_counts_each_row_as_its_evidence() -> None:
    rows = mixed_rows(400)[["x", "y", "b"]].astype(float)
    own = make_ci_test(rows, "fisherz")
    halved = make_ci_test(rows, "fisherz", evidence=0.5)
    r = rows.corr().loc["x", "y"]
    z = np.sqrt(0.5 * (len(rows) - 3)) * abs(np.arctanh(r))
    assert halved.pvalue(0, 1) == pytest.approx(float(2 * (1 - _normal_cdf(z))), rel=1e-9)
    assert halved.pvalue(0, 1) > own.pvalue(0, 1)


def _normal_cdf(z: float) -> float:
    from math import erf, sqrt

    return 0.5 * (1 + erf(z / sqrt(2)))


def test_batched_and_single_tests_count_the_same_evidence() -> None:
    rows = mixed_rows(500)[["a", "b", "c"]]
    halved = make_ci_test(rows, "g2", evidence=0.5)
    batched = halved.compute_many(0, 1, [(2,)])
    unconditional = halved.compute_unconditional([(0, 1)])
    single = make_ci_test(rows, "g2", evidence=0.5)
    assert batched is not None and unconditional is not None
    assert batched[0][0] == pytest.approx(single.pvalue(0, 1, (2,)), rel=1e-9)
    assert unconditional[0][0] == pytest.approx(single.pvalue(0, 1), rel=1e-9)


def test_the_corrected_bootstrap_rejects_independence_at_about_alpha() -> None:
    # X and Y independent: a test on the sample rejects at about alpha; on a bootstrap
    # sample of it, counted as new rows, far more often (about 0.3: the resample adds
    # its own noise to the sample's); at half a row each (what ClientData.resampled
    # gives a bootstrap sample), at about alpha again.
    rng = np.random.default_rng(0)
    trials, n = 200, 200
    rejected = {"sample": 0, "plain": 0, "corrected": 0}
    for _ in range(trials):
        sample = rng.integers(0, 3, (n, 2))
        drawn = sample[rng.integers(0, n, n)]
        rejected["sample"] += make_ci_test(sample).pvalue(0, 1) <= ALPHA
        rejected["plain"] += make_ci_test(drawn).pvalue(0, 1) <= ALPHA
        rejected["corrected"] += (
            make_ci_test(drawn, evidence=RESAMPLE_EVIDENCE).pvalue(0, 1) <= ALPHA
        )
    share = {k: v / trials for k, v in rejected.items()}
    assert share["sample"] < 0.09
    assert share["plain"] > 0.2
    assert share["corrected"] < 0.09


def test_a_subsample_keeps_full_evidence_and_bad_evidence_is_refused() -> None:
    sample = ClientData("s", mixed_rows(40)[["a", "b"]])
    rng = np.random.default_rng(0)
    assert sample.resampled(rng).evidence == 0.5
    assert sample.resampled(rng, 0.5).evidence == 1.0
    assert sample.resampled(rng, correct_duplicates=False).evidence == 1.0
    with pytest.raises(ConfigError, match=r"evidence = 0: give how much one row counts"):
        make_ci_test(sample.rows, "g2", evidence=0)
    with pytest.raises(DataError, match=r"client 's': evidence = 2"):
        ClientData("s", sample.rows, evidence=2)
