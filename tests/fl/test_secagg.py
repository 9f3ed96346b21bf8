"""Secure aggregation (fedstruct.fl.secagg): the sum is the plain sum within the stated
bound, dropouts up to the threshold are survived, above it the round fails clearly,
and the server never holds a client's summable reply in the clear."""

from collections.abc import Mapping

import numpy as np
import pandas as pd
import pytest

from fedstruct.data.client import ClientData
from fedstruct.errors import PrivacyViolationError, ProtocolError, SecureAggregationError
from fedstruct.fl import Client, LocalGrid, Message, handles
from fedstruct.fl.secagg import SecAggConfig, neighbour_graph
from fedstruct.fl.secagg import protocol as p
from fedstruct.fl.secagg.quantize import dequantise, quantise
from fedstruct.fl.summation import plain_sum, send_and_sum

KIND = "toy.update"
DEFAULT = SecAggConfig()


class ToyClient(Client):
    """Answers with a per-client update: float weights, an int count, metrics."""

    @handles(KIND, max_entries=64, summable=True)
    def update(self, msg: Message) -> Message:
        rng = np.random.default_rng(int(self.name[1:]))
        return Message(
            KIND,
            arrays={
                "w": rng.normal(size=(3, 4)).astype(np.float32) * float(msg.config["scale"]),
                "counts": rng.integers(0, 50, size=5),
            },
            metrics={"n": int(rng.integers(1, 100)), "loss": float(rng.random())},
        )

    @handles("toy.private", max_entries=4)
    def private(self, msg: Message) -> Message:
        return Message("toy.private", metrics={"x": 1.0})


def _clients(n: int) -> list[ToyClient]:
    rows = pd.DataFrame({"a": np.arange(4) % 2, "b": np.arange(4) // 2})
    return [ToyClient(ClientData(f"c{i}", rows)) for i in range(n)]


class DroppingGrid(LocalGrid):
    """A local grid whose nodes in ``drop`` stop answering from stage ``after`` on, and
    that records every reply the server receives (the audit hook)."""

    def __init__(self, clients, drop=(), after=p.MASK, **kwargs) -> None:
        super().__init__(clients, **kwargs)
        self.drop, self.after = set(drop), after
        self.received: list[tuple[int, Message]] = []

    def _exchange(self, messages: Mapping[int, Message]) -> dict[int, Message]:
        stages = (p.KEYS, p.SHARE, p.MASK, p.UNMASK)
        kind = next(iter(messages.values())).kind
        if kind in stages and stages.index(kind) >= stages.index(self.after):
            messages = {n: m for n, m in messages.items() if n not in self.drop}
        replies = super()._exchange(messages)
        self.received += sorted(replies.items())
        return replies


def _grid(n: int, config: SecAggConfig | None = DEFAULT, **kwargs) -> DroppingGrid:
    grid = DroppingGrid(_clients(n), **kwargs)
    grid.secure_aggregation = config
    grid.begin_round(1)
    return grid


def _request(grid: LocalGrid, scale: float = 1.0) -> dict[int, Message]:
    return {n: Message(KIND, config={"scale": scale}) for n in grid.node_ids()}


def _plain(n: int, nodes=None, weight=None, scale: float = 1.0):
    grid = _grid(n, None)
    request = {k: m for k, m in _request(grid, scale).items() if nodes is None or k in nodes}
    return send_and_sum(grid, request, weight=weight)


@pytest.mark.parametrize("n", [5, 12, 20])
def test_the_secure_sum_is_the_plain_sum_within_the_stated_bound(n):
    config = SecAggConfig()
    secure = send_and_sum(_grid(n, config), _request(_grid(n, None)))
    plain = _plain(n)
    assert secure.nodes == plain.nodes == tuple(range(n))
    bound = n * 2.0 ** -(config.fractional_bits + 1)
    assert np.max(np.abs(secure.arrays["w"] - plain.arrays["w"])) <= bound
    assert np.array_equal(secure.arrays["counts"], plain.arrays["counts"])  # integers: exact
    assert secure.arrays["counts"].dtype == np.int64
    assert secure.metrics["n"] == plain.metrics["n"]
    assert abs(secure.metrics["loss"] - plain.metrics["loss"]) <= bound


def test_a_weighted_sum_multiplies_by_the_weight_metric_first():
    n, config = 6, SecAggConfig()
    secure = send_and_sum(_grid(n, config), _request(_grid(n, None)), weight="n")
    plain = _plain(n, weight="n")
    assert secure.metrics["n"] == plain.metrics["n"]
    # the error of a weighted element: n_k * 2^-(s+1) rounded once per client
    assert np.allclose(secure.arrays["w"], plain.arrays["w"], rtol=0, atol=n * 2.0**-20)
    replies = {c.name: c.handle(Message(KIND, config={"scale": 1.0})) for c in _clients(n)}
    expected = sum(r.metrics["n"] * r.arrays["w"].astype(np.float64) for r in replies.values())
    assert np.allclose(plain.arrays["w"], expected)


def test_plain_summation_adds_in_node_order_like_a_loop():
    grid = _grid(4, None)
    replies = {
        n: c.handle(Message(KIND, config={"scale": 1.0})) for n, c in enumerate(grid.clients)
    }
    total = replies[0].arrays["w"].astype(np.float64)
    for n in (1, 2, 3):
        total = total + replies[n].arrays["w"]
    assert np.array_equal(plain_sum(replies).arrays["w"], total)


def test_dropouts_after_sharing_keys_up_to_the_threshold_give_the_survivors_sum():
    # n = 10: k = 8 neighbours, t = 5; three dropouts leave every client >= 5
    n, drop = 10, {2, 5, 7}
    grid = _grid(n, drop=drop, after=p.MASK)
    result = send_and_sum(grid, _request(grid))
    survivors = tuple(sorted(set(range(n)) - drop))
    assert result.nodes == survivors and result.dropped == tuple(sorted(drop))
    plain = _plain(n, nodes=survivors)
    assert np.allclose(result.arrays["w"], plain.arrays["w"], rtol=0, atol=n * 2.0**-25)
    assert np.array_equal(result.arrays["counts"], plain.arrays["counts"])


def test_dropouts_in_the_last_stage_up_to_the_threshold_are_survived():
    n, drop = 10, {0, 9}
    grid = _grid(n, drop=drop, after=p.UNMASK)
    result = send_and_sum(grid, _request(grid))
    assert result.nodes == tuple(range(n))  # their masked answers arrived: they count
    assert np.array_equal(result.arrays["counts"], _plain(n).arrays["counts"])


def test_dropouts_above_the_threshold_fail_the_round_with_a_clear_message():
    # five of ten drop after sending shares: every client keeps at most 4 < t = 5
    grid = _grid(10, drop={1, 3, 4, 6, 8}, after=p.MASK)
    with pytest.raises(SecureAggregationError, match=r"neighbours answered .* resume the run"):
        send_and_sum(grid, _request(grid))


def test_too_few_clients_are_withheld_not_revealed():
    grid = _grid(3, drop={0, 1}, after=p.KEYS)
    result = send_and_sum(grid, _request(grid))
    assert result.nodes == () and result.withheld == 1 and result.arrays == {}


def test_the_server_never_receives_a_summable_reply_in_the_clear():
    """The audit: every payload the server receives during a secure sum is a masked
    vector or protocol data; none equals (or is close to) a client's plain update."""
    n = 8
    grid = _grid(n)
    send_and_sum(grid, _request(grid))
    plain = {i: c.handle(Message(KIND, config={"scale": 1.0})) for i, c in enumerate(grid.clients)}
    kinds = {m.kind for _, m in grid.received}
    assert kinds == {p.KEYS, p.SHARE, p.MASK, p.UNMASK}, "a reply left the protocol"
    masked = [(i, m) for i, m in grid.received if m.kind == p.MASK]
    assert len(masked) == n
    bits = SecAggConfig().fractional_bits
    for i, message in masked:
        assert set(message.arrays) == {p.MASKED}
        received = message.arrays[p.MASKED]
        vector, layout = quantise(dict(plain[i].arrays), dict(plain[i].metrics), bits, n, "")
        assert not np.array_equal(received, vector)
        values, metrics = dequantise(received, layout, bits)
        assert not np.allclose(values["w"], plain[i].arrays["w"], atol=1e-3)
        assert not np.array_equal(values["counts"], plain[i].arrays["counts"])
        assert metrics["n"] != plain[i].metrics["n"]
    for _, message in grid.received:  # nothing else carries an array
        assert message.kind == p.MASK or not message.arrays


def test_a_kind_that_is_not_summable_is_refused_inside_the_protocol():
    grid = _grid(4)
    with pytest.raises(ProtocolError, match="does not declare summable=True"):
        send_and_sum(grid, {n: Message("toy.private") for n in grid.node_ids()})


def test_a_client_that_requires_secure_aggregation_refuses_summable_kinds_in_the_clear():
    client = _clients(1)[0]
    client.require_secure_aggregation = True
    with pytest.raises(PrivacyViolationError, match="requires secure aggregation"):
        client.handle(Message(KIND, config={"scale": 1.0}))
    assert client.handle(Message("toy.private")).metrics == {"x": 1.0}
    grid = _grid(4)
    for c in grid.clients:
        c.require_secure_aggregation = True
    assert send_and_sum(grid, _request(grid)).nodes == (0, 1, 2, 3)


def test_a_value_beyond_the_fixed_point_range_is_refused_naming_it():
    grid = _grid(4, SecAggConfig(fractional_bits=40))
    with pytest.raises(SecureAggregationError, match=r"'w' holds .* fractional_bits"):
        send_and_sum(grid, _request(grid, scale=1e7))


def test_secrets_stay_out_of_client_state():
    grid = _grid(4)
    send_and_sum(grid, _request(grid))
    assert all(c.get_state() == {} and c._secagg is None for c in grid.clients)


@pytest.mark.parametrize("n", [10, 50, 200])
def test_the_graph_is_symmetric_of_degree_k_about_2_log2_n(n):
    config = SecAggConfig()
    k = config.degree(n)
    graph = neighbour_graph(range(n), k, np.random.default_rng(0))
    assert all(len(graph[v]) == k and v not in graph[v] for v in graph)
    assert all(v in graph[u] for v in graph for u in graph[v])
    assert k == min(n - 1, 2 * int(np.ceil(np.log2(n))))
    assert config.reconstruction_threshold(n) == k // 2 + 1


def test_a_supernode_can_require_secure_aggregation(monkeypatch, tmp_path):
    """``fedstruct flower supernode --require-secure-aggregation`` puts the key in the
    node's config, and the ClientApp reads it into every client it builds."""
    pytest.importorskip("flwr")
    from types import SimpleNamespace

    from typer.testing import CliRunner

    from fedstruct.cli import app
    from fedstruct.cli import flower as flower_commands
    from fedstruct.fl.flower import cluster
    from fedstruct.fl.flower.client_app import requires_secure_aggregation

    started = []
    monkeypatch.setattr(flower_commands, "_exec", lambda cmd, home, *rest: started.append(cmd))
    monkeypatch.setattr(cluster, "wait_reachable", lambda link, timeout: None)
    args = ["flower", "supernode", "--partition", "0", "--insecure", "--home", str(tmp_path)]
    for flag, expected in (([], False), (["--require-secure-aggregation"], True)):
        result = CliRunner().invoke(app, [*args, *flag])
        assert result.exit_code == 0, result.output
        config = started[-1][started[-1].index("--node-config") + 1]
        assert ("require-secure-aggregation=true" in config) is expected
        node_config = dict(item.split("=") for item in config.split(" "))
        context = SimpleNamespace(node_config=node_config)
        assert requires_secure_aggregation(context) is expected


def test_integer_entries_are_exact_beyond_float64_s_integers():
    """Counts scale in int64 arithmetic: 3e9 + 1 survives (float64 * 2^24 would not)."""
    counts = np.array([3_000_000_001, -7, 0], dtype=np.int64)
    vector, layout = quantise({"counts": counts}, {"n": 2_000_000_003}, 24, 4, "test")
    arrays, metrics = dequantise(vector + vector, layout, 24)
    assert np.array_equal(arrays["counts"], 2 * counts) and metrics["n"] == 4_000_000_006


def test_a_deployed_node_builds_its_client_only_for_the_masked_answer(caplog):
    """A node's ClientApp answers the keys, shares and unmask stages from the session
    kept in its context, without calling its factory (no method, no data, no torch);
    only the masked answer builds the client. The sum is the plain one, the session
    is gone from the node's memory afterwards, and the node's log names every message
    and its reply's arrays, never a value."""
    pytest.importorskip("flwr")
    import logging

    from flwr.app import Context, Metadata, RecordDict
    from flwr.app import Message as FlowerMessage

    from fedstruct.fl.flower.client_app import LOG_PREFIX, make_client_app
    from fedstruct.fl.flower.grid import MESSAGE_TYPE
    from fedstruct.fl.flower.records import from_records, to_records
    from fedstruct.fl.secagg.server import secure_sum

    n, clients, stage, built = 4, _clients(4), [""], []

    def factory(context):
        built.append(stage[0])  # the stage in which the client was built
        return clients[int(context.node_config["partition-id"])]

    app = make_client_app(factory)
    node_config = {"require-secure-aggregation": "true"}
    contexts = [
        Context(1, k, {"partition-id": k, **node_config}, RecordDict(), {}) for k in range(n)
    ]

    def ask(node: int, message: Message):
        metadata = Metadata(1, f"m{node}", 0, node, "", "1", 0.0, 600.0, MESSAGE_TYPE)
        return app(FlowerMessage(to_records(message), metadata=metadata), contexts[node])

    def exchange(messages: Mapping[int, Message]) -> dict[int, Message]:
        stage[0] = next(iter(messages.values())).kind
        stamped = {
            k: Message(m.kind, m.arrays, {**m.config, "round": 1}) for k, m in messages.items()
        }
        return {k: from_records(ask(k, m).content) for k, m in stamped.items()}

    request = {k: Message(KIND, config={"scale": 1.0, "round": 1}) for k in range(n)}
    with caplog.at_level(logging.INFO, logger="flwr"):
        result = secure_sum(exchange, request, DEFAULT)
        assert built == [p.MASK] * n
        refused = ask(0, request[0])  # in the clear: refused with the node's reason
    assert np.array_equal(result.arrays["counts"], _plain(n).arrays["counts"])
    assert all(not c.state.config_records for c in contexts)  # no secret, no state left
    assert "requires secure aggregation" in str(refused.content.config_records)
    lines = [r.getMessage() for r in caplog.records if LOG_PREFIX in r.getMessage()]
    assert len(lines) == 2 * 4 * n + 2
    assert sum(line.endswith(f" received {p.MASK} (round 1; inner {KIND})") for line in lines) == n
    masked = [line for line in lines if f"answered {p.MASK}" in line]
    assert len(masked) == n and all(f"arrays {p.MASKED} uint64[" in m for m in masked)
    assert "refused toy.update: PrivacyViolationError: client 'c0' requires" in lines[-1]
    plain = [c.answer_summable(request[0]) for c in clients]
    values = [str(r.metrics["loss"]) for r in plain] + [str(r.arrays["w"][0, 0]) for r in plain]
    assert not any(v in line for v in values for line in lines)  # names and sizes only
