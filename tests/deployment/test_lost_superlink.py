"""A SuperLink lost while the submitter waits: one line saying what to do next, which
for a method's run is ``--resume`` and for a catalogue (nothing to resume) asking again."""

from __future__ import annotations

import pytest

from fedstruct.deployment import submit
from fedstruct.deployment.catalogue import CATALOGUE
from fedstruct.errors import DeploymentError
from fedstruct.fl.flower.cluster import Link


def _unreachable(*args, **kwargs):
    raise DeploymentError("cannot reach the SuperLink")


@pytest.mark.parametrize(
    ("name", "advice"),
    [
        ("fedavg", "resume with 'fedstruct run fedavg --resume {out}'"),
        (
            CATALOGUE,
            "ask again once it is back: 'fedstruct flower catalogue --out {out} --overwrite'",
        ),
    ],
)
def test_a_lost_superlink_says_what_to_do_next_in_one_line(tmp_path, monkeypatch, name, advice):
    monkeypatch.setattr(submit, "run_status", _unreachable)
    link = Link(address="127.0.0.1:1", root_certificates=None)
    with pytest.raises(DeploymentError) as lost:
        submit._wait("7", link, None, name, tmp_path, "run-1234abcd", progress=False)
    message = str(lost.value)
    assert message.startswith("lost the SuperLink at 127.0.0.1:1 during ")
    assert message.endswith(advice.format(out=tmp_path)) and "\n" not in message
