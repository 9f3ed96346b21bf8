"""The table reader on pandas' C parser: text columns as ``category``, typed as pandas."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fedstruct.data.sites import infer_kinds, read_federation, read_table


def test_text_columns_are_categories_holding_pandas_values(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    path.write_text("x,t,b\n0.5,low,True\n1.5,,False\n2.5,high,True\n")
    frame, whole = read_table(path), pd.read_csv(path)
    assert isinstance(frame["t"].dtype, pd.CategoricalDtype)
    assert frame["t"].tolist()[::2] == ["low", "high"] and frame["t"].isna().tolist()[1]
    assert frame["x"].dtype == np.float64 and frame["b"].dtype == bool
    pd.testing.assert_frame_equal(frame.astype(str), whole.astype(str))


def test_text_after_the_head_is_typed_as_pandas_types_it(tmp_path: Path) -> None:
    """A column of numbers for 1,500 rows, then a word, is text to pandas: read so,
    though the reader's head (1,000 rows) saw only numbers."""
    values = [str(i % 7) for i in range(1500)] + ["seven"]
    path = tmp_path / "late.csv"
    path.write_text("c,x\n" + "".join(f"{v},{i}\n" for i, v in enumerate(values)))
    frame, whole = read_table(path), pd.read_csv(path)
    assert frame["c"].tolist() == whole["c"].tolist() == values
    assert infer_kinds(frame)["c"] == "categorical"


def test_a_path_with_an_equals_sign_is_a_path(tmp_path: Path) -> None:
    """NAME=PATH is the command line's grammar (experiments/site_args.py), not the
    data layer's: read_federation takes the string as the file's path."""
    path = tmp_path / "k=v.csv"
    path.write_text("x\n" + "".join(f"{i % 3}\n" for i in range(12)))
    (client,) = read_federation([str(path)]).clients
    assert client.name == "k=v" and client.n_rows == 12
