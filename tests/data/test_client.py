"""ClientData and check_federation: validation, views, selection."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedstruct.data.client import OBSERVATIONAL, ClientData, check_federation
from fedstruct.errors import DataError, NonFiniteDataError, UnknownVariableError
from fedstruct.graphs.graph import Graph


def rows() -> pd.DataFrame:
    return pd.DataFrame(
        {"A": [0, 1, 1, 0, 1], "B": [1, 1, 0, 0, 2], "C": [0.5, 1.5, 2.5, 3.5, 4.5]}
    )


def with_interventions() -> ClientData:
    return ClientData("site-1", rows(), intervention=np.array([-1, -1, 0, 0, 2]))


# -------------------------------------------------------------- validation
@pytest.mark.parametrize(
    ("kwargs", "error", "fragment"),
    [
        ({"name": ""}, DataError, "non-empty string"),
        ({"rows": rows().iloc[:0]}, DataError, "has no rows"),
        ({"rows": rows().to_numpy()}, DataError, "must be a pandas DataFrame"),
        ({"rows": rows().rename(columns={"B": "A"})}, DataError, "unique strings"),
        ({"rows": rows().assign(D=["x"] * 5)}, DataError, "column 'D' has dtype"),
        ({"supervised": ("Z",)}, UnknownVariableError, "supervises 'Z'"),
        ({"intervention": np.zeros(4, dtype=int)}, DataError, r"one integer per row \(5\)"),
        ({"intervention": np.zeros(5)}, DataError, "of dtype float64"),
        ({"intervention": np.array([0, 0, 0, 0, 3])}, DataError, r"codes must lie in -1\.\.2"),
        ({"intervention": np.array([0, 0, 0, 0, -2])}, DataError, r"codes must lie in -1\.\.2"),
    ],
)
def test_invalid_client_data(kwargs, error, fragment) -> None:
    args = {"name": "site-1", "rows": rows(), **kwargs}
    with pytest.raises(error, match=fragment) as err:
        ClientData(**args)
    assert "\n" not in str(err.value)


def test_non_finite_values_name_the_column_and_count() -> None:
    data = rows()
    data.loc[[1, 3], "C"] = [np.nan, np.inf]
    with pytest.raises(NonFiniteDataError, match="column 'C' has 2 NaN or infinite values"):
        ClientData("site-1", data)


def test_missing_values_are_kept_only_when_the_client_says_so() -> None:
    """missing_values=True (a site read with missing="keep") lets NaN through, never inf."""
    data = rows()
    data.loc[[1, 3], "C"] = np.nan
    assert ClientData("site-1", data, missing_values=True).rows["C"].isna().sum() == 2
    data.loc[4, "C"] = np.inf
    with pytest.raises(NonFiniteDataError, match="column 'C' has 1 infinite values"):
        ClientData("site-1", data, missing_values=True)


def test_non_finite_values_are_found_in_float_columns_only(monkeypatch) -> None:
    monkeypatch.setattr("fedstruct.data.client._CHECK_CELLS", 4)  # a column or two at a time
    data = rows().assign(flag=[True, False, True, True, False])
    data["D"] = np.array([1, 2, np.inf, 4, -np.inf], dtype=np.float32)
    with pytest.raises(NonFiniteDataError, match="column 'D' has 2 NaN or infinite values"):
        ClientData("site-1", data)
    wide = pd.DataFrame(np.zeros((3, 40)), columns=[f"p{j}" for j in range(40)])
    wide.iloc[1, 33] = np.nan
    with pytest.raises(NonFiniteDataError, match="column 'p33' has 1 NaN or infinite values"):
        ClientData("site-1", wide.assign(label=[0, 1, 0]))
    ClientData("site-1", pd.DataFrame({"huge": [1e308, 1e308], "n": [1, 2]}))  # sum overflows


# ------------------------------------------------------------------- views
def test_views_without_interventions() -> None:
    c = ClientData("site-1", rows(), supervised=["B"])
    assert c.variables == ("A", "B", "C") and c.n_rows == 5
    assert c.supervised == ("B",)
    assert c.regimes().tolist() == [OBSERVATIONAL] * 5
    assert c.intervention_targets == ()
    assert len(c.observational()) == 5


def test_intervention_views() -> None:
    c = with_interventions()
    assert c.intervention_targets == ("A", "C")
    assert c.observational().index.tolist() == [0, 1]
    assert c.interventional("A").index.tolist() == [2, 3]
    assert c.interventional("C")["C"].tolist() == [4.5]
    with pytest.raises(UnknownVariableError, match="no interventional rows on 'B'"):
        c.interventional("B")
    with pytest.raises(UnknownVariableError, match="has no variable 'Z'"):
        c.interventional("Z")
    # The stored codes are a read-only copy.
    with pytest.raises(ValueError):
        c.intervention[0] = 1  # type: ignore[index]


def test_select_reorders_and_recodes_interventions() -> None:
    c = with_interventions()
    s = c.select(["C", "A"])
    assert s.variables == ("C", "A")
    # A was column 0, C column 2: now C is 0 and A is 1.
    assert s.regimes().tolist() == [-1, -1, 1, 1, 0]
    assert s.intervention_targets == ("C", "A")
    assert s.interventional("A").index.tolist() == [2, 3]
    with pytest.raises(DataError, match=r"interventional rows on \['A'\]"):
        c.select(["B", "C"])
    with pytest.raises(UnknownVariableError, match=r"no variables \['Z'\]"):
        c.select(["A", "Z"])
    sup = ClientData("s", rows(), supervised=("A", "B")).select(["B", "C"])
    assert sup.supervised == ("B",)


def test_client_graph_must_stay_within_its_supervision() -> None:
    graph = Graph.from_edges(["A", "B"], [("A", "B")])
    c = ClientData("g", rows(), supervised=("A", "B"), graph=graph)
    assert c.graph == graph
    with pytest.raises(UnknownVariableError, match=r"client 'h': its graph names \['B'\]"):
        ClientData("h", rows(), supervised=("A",), graph=graph)
    with pytest.raises(DataError, match="must be a fedstruct Graph"):
        ClientData("h", rows(), supervised=("A", "B"), graph="A->B")  # type: ignore[arg-type]
    kept = c.select(["A", "C"])
    assert kept.graph == Graph.empty(["A"]) and kept.supervised == ("A",)


# -------------------------------------------------------------- federation
def test_check_federation() -> None:
    a = ClientData("a", rows())
    b = ClientData("b", rows()[["A", "B"]])
    check_federation([a, b], variables=["A", "B", "C"])
    with pytest.raises(DataError, match="at least one client"):
        check_federation([])
    with pytest.raises(DataError, match=r"repeated: \['a'\]"):
        check_federation([a, ClientData("a", rows())])
    with pytest.raises(UnknownVariableError, match=r"client 'a' holds \['C'\]"):
        check_federation([a, b], variables=["A", "B"])
