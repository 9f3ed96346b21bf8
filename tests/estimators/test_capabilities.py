"""Issue 52, item 1: generic verbs ask an estimator for a capability (predict, sample,
query, show), not for its method, and say the same as before to a model without it."""

from __future__ import annotations

import pytest

from fedstruct.errors import ArtifactError
from fedstruct.estimators import GraphLearner, JointModel, Predictor
from fedstruct.methods.cafe import CAFE
from fedstruct.methods.fcm import FCM
from fedstruct.methods.fedavg import FedAvg
from fedstruct.methods.fedcd import FedCD
from fedstruct.methods.fedcdnv import FedCDnv
from fedstruct.methods.fedfci import FedFCI
from fedstruct.methods.fedngm import FedNGM
from fedstruct.registry import estimator_class, method_names
from fedstruct.results import use


def test_each_method_declares_what_it_can_do():
    capable = {
        name: {c.__name__ for c in (Predictor, GraphLearner, JointModel) if issubclass(cls, c)}
        for name, cls in ((n, estimator_class(n)) for n in method_names("estimator"))
    }
    assert capable["fedavg"] == capable["cafe"] == capable["fcm"] == {"Predictor"}
    assert capable["fedngm"] == {"Predictor", "JointModel"}
    assert capable["fedcd"] == capable["fedcdnv"] == capable["fedfci"] == {"GraphLearner"}
    # a graph learner has no prediction to ask for
    assert not any(hasattr(cls, "prediction") for cls in (FedCD, FedCDnv, FedFCI))


def test_predict_on_a_graph_learner_says_it_learns_a_graph(monkeypatch):
    monkeypatch.setattr(use, "load", lambda folder: FedCD())
    with pytest.raises(ArtifactError) as err:
        use.predict_file("run", "rows.csv")
    assert str(err.value) == (
        "fedcd learns a graph, not a model that predicts; look at it with 'fedstruct show "
        "DIR' or export it with 'fedstruct export DIR'"
    )


@pytest.mark.parametrize("verb", ["sample", "query"])
def test_sample_and_query_need_a_joint_model(monkeypatch, verb):
    monkeypatch.setattr(use, "load", lambda folder: FedAvg("y", {"y": 2}))
    with pytest.raises(ArtifactError) as err:
        use.sample("run", 3) if verb == "sample" else use.query("run", {}, "y")
    assert str(err.value) == (
        f"run holds a fedavg model; {verb} needs a FedNGM run (a model of the joint distribution)"
    )


def test_a_predictor_says_whether_it_reads_images_or_predicts_values():
    images = CAFE((1, 8, 8), 10).prepare()
    table = CAFE(target="y", cardinalities={"y": 2, "x": 3}).prepare()
    assert images.image_shape() == (1, 8, 8) and table.image_shape() is None
    regression = FedAvg("y", {"x": 2}, continuous=("y",)).prepare()
    assert regression.is_regression() and not FedAvg("y", {"y": 2}).prepare().is_regression()
    concepts = FCM(task="y", cardinalities={"y": 2}).prepare()
    assert concepts.image_shape() is None and not concepts.is_regression()
    assert issubclass(FedNGM, JointModel)
