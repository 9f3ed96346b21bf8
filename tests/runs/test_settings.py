"""Run settings: layers, mapping entries (``--set kinds.COL=...``), the documentation."""

from __future__ import annotations

import pytest

from fedstruct.errors import ConfigError
from fedstruct.methods.fedavg import FedAvgRun
from fedstruct.runs.settings import (
    apply_settings,
    first_sentence,
    parameter_docs,
    parse_assignments,
    plain_text,
)


def test_mapping_entries_merge_and_whole_mappings_replace():
    base = FedAvgRun()
    one = apply_settings(base, parse_assignments(["kinds.age=ordinal"]), method="fedavg")
    two = apply_settings(one, {"kinds.sex": "categorical"}, method="fedavg")
    assert two.kinds == {"age": "ordinal", "sex": "categorical"}
    assert base.kinds == {}  # the defaults are not changed
    whole = apply_settings(two, {"kinds": {"bmi": "continuous"}}, method="fedavg")
    assert whole.kinds == {"bmi": "continuous"}


def test_mapping_entry_of_a_setting_that_is_no_mapping():
    with pytest.raises(ConfigError, match="setting 'rounds' is not a mapping"):
        apply_settings(FedAvgRun(), {"rounds.x": 3}, method="fedavg")
    with pytest.raises(ConfigError, match=r"unknown fedavg setting 'nokinds\.x'"):
        apply_settings(FedAvgRun(), {"nokinds.x": 3}, method="fedavg")


def test_a_list_setting_takes_one_value_or_a_list():
    one = apply_settings(FedAvgRun(), {"sites": "a.csv"}, method="fedavg")
    assert one.sites == ("a.csv",)
    two = apply_settings(FedAvgRun(), {"sites": ["a.csv", "b.csv"]}, method="fedavg")
    assert two.sites == ("a.csv", "b.csv")


def test_parameter_docs_reads_numpydoc_entries():
    doc = """Title.

    Parameters
    ----------
    alpha, beta
        Two at once (App. B.1 says so). Second sentence.
    gamma : int
        ``code`` and :func:`~fedstruct.graphs.io.read_graph` in
        two lines.

        A second paragraph.

    Raises
    ------
    ConfigError
        Not a parameter.
    """
    docs = parameter_docs(doc)
    assert docs == {
        "alpha": "Two at once (App. B.1 says so).",
        "beta": "Two at once (App. B.1 says so).",
        "gamma": "code and read_graph in two lines.",
    }


def test_first_sentence_and_plain_text():
    assert first_sentence("Eq. 3 holds. Then more.") == "Eq. 3 holds."
    assert first_sentence("No period here") == "No period here"
    assert plain_text(":class:`fedstruct.fl.Participation` of ``x``") == "Participation of x"


@pytest.mark.parametrize("method", ["fedcdnv", "fedcd"])
def test_the_large_bundled_networks_feed_the_discovery_methods(method):
    """``--network pigs`` and munin (issue 51) are accepted and their rows sampled (FED-CD:
    pigs only, its 441 interventional samples; munin's 1,041 take seconds)."""
    from fedstruct.data import load_network
    from fedstruct.runs import runnable

    entry = runnable(method)
    for network in ("pigs", "munin") if method == "fedcdnv" else ("pigs",):
        chosen = {"network": network, "samples": 200, "samples_per_intervention": 2}
        if method == "fedcdnv":
            chosen = {"network": network, "min_samples": 100, "max_samples": 120}
        settings = apply_settings(entry.settings(), chosen, method=method)
        client = entry.resolve(settings).clients()[0]
        names = load_network(network).names
        assert set(client.variables) <= set(names) and len(client.variables) > 100
        assert client.rows.shape[0] >= 100
