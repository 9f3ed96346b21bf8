"""The CAFE family with secure aggregation: the same model as without it (to the
quantisation bound), the server never holds a site's reply in the clear, and late
answers that could not join a secure sum are refused."""

from __future__ import annotations

import numpy as np
import pytest

from fedstruct.data.datasets.images import load_digits
from fedstruct.errors import ConfigError
from fedstruct.fl import Participation
from fedstruct.fl.secagg import protocol as p
from fedstruct.methods.cafe import CAFE
from fedstruct.methods.cafe.server import POOLED_SITES
from fedstruct.methods.cafe.sources import image_clients


@pytest.fixture(scope="module")
def digits_fed():
    digits = load_digits(seed=0)
    fed = image_clients(digits, 3, alpha=1.0, min_per_client=5, seed=0)
    return digits, fed.clients, fed.test.iloc[:200]


def _fit(digits, clients, test, algorithm, backend, **params):
    model = CAFE(digits.shape, 10, algorithm=algorithm, rounds=2, local_epochs=1,
                 eval_every=1, test_fraction=0.3, seed=0, **params)  # fmt: skip
    model.fit(clients, test=test, backend=backend)
    return model, backend.received


@pytest.mark.parametrize("algorithm", ["cafe", "fedproto"])
def test_secure_aggregation_gives_the_plain_model_and_hides_every_reply(
    digits_fed, algorithm, recording_backend
):
    """3 clients, 2 rounds: the accuracy of every round equals the plain run's to 4
    decimals (the sums are off by ~3e-8 per site), the sites' scores are only summed,
    and every reply the server receives is a protocol message."""
    digits, clients, test = digits_fed
    plain, _ = _fit(digits, clients, test, algorithm, recording_backend())
    secure, received = _fit(
        digits, clients, test, algorithm, recording_backend(), secure_aggregation=True
    )
    for a, b in zip(plain.history_, secure.history_, strict=True):
        assert round(a["test_accuracy"], 4) == round(b["test_accuracy"], 4)
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-6)
        assert a["clients_answered"] == b["clients_answered"] == 3
    if algorithm == "cafe":
        np.testing.assert_allclose(secure.drift_, plain.drift_, atol=1e-5)
    else:
        np.testing.assert_allclose(secure.prototypes_, plain.prototypes_, atol=1e-5)
    pooled = {k: sum(s[k] for s in plain.site_scores_.values()) for k in ("n", "correct")}
    assert secure.site_scores_ == {POOLED_SITES: pooled}
    assert {m.kind for _, m in received} == {p.KEYS, p.SHARE, p.MASK, p.UNMASK}


def test_late_answers_cannot_be_merged_into_a_secure_sum():
    late = Participation(report_rate=0.5)
    with pytest.raises(ConfigError, match="staleness_exponent=None"):
        CAFE((1, 8, 8), 10, participation=late, secure_aggregation=True).prepare()
    CAFE(
        (1, 8, 8), 10, participation=late, staleness_exponent=None, secure_aggregation=True
    ).prepare()
    CAFE((1, 8, 8), 10, secure_aggregation=True).prepare()  # everyone reports: nothing is late
