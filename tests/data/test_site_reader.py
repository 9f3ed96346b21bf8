"""The table reader on pandas' C parser: text columns as ``category``, typed as pandas;
levels and codes taken from category codes and integer ranges."""

from __future__ import annotations

import gzip
import re
import unicodedata
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedstruct.data.sites import (
    encode_site,
    infer_kinds,
    merge_schemas,
    read_federation,
    read_table,
    site_schema,
)
from fedstruct.errors import DataError


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
    """NAME=PATH is the command line's grammar (runs/site_args.py), not the
    data layer's: read_federation takes the string as the file's path."""
    path = tmp_path / "k=v.csv"
    path.write_text("x\n" + "".join(f"{i % 3}\n" for i in range(12)))
    (client,) = read_federation([str(path)]).clients
    assert client.name == "k=v" and client.n_rows == 12


def test_text_in_chunks_pandas_types_as_numbers_keeps_every_value_as_written(
    tmp_path: Path,
) -> None:
    """pandas reads a long file in chunks of 262,144 rows: a text column whose later
    chunks hold only numbers ("01") would be numbers there; read as text throughout,
    without pandas' warning of mixed types."""
    path = tmp_path / "mixed.csv"
    path.write_text("t,y\n" + "a,1\n" * 1000 + "".join(f"0{i % 5},1\n" for i in range(263_000)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frame = read_table(path)
    whole = pd.read_csv(path, dtype={"t": "category"})
    assert list(frame["t"].cat.categories) == ["00", "01", "02", "03", "04", "a"]
    pd.testing.assert_frame_equal(frame, whole)


def test_a_category_column_and_its_values_as_text_give_one_schema_and_codes() -> None:
    """Codes and levels are taken from a category column's codes (categories without
    rows left out), from an integer column by counting its range: both as hashing
    every value gives them."""
    text = ["x", "z", None, "x", "z", "z"]
    kinds = {"c": "categorical", "n": "categorical", "y": "continuous"}
    ints = np.array([-128, 127, 3, -128, 3, 3], dtype=np.int8)
    y = np.arange(6.0)
    as_codes = pd.DataFrame(
        {"c": pd.Categorical(text, categories=["w", "x", "y", "z"]), "n": ints, "y": y}
    )
    as_values = pd.DataFrame({"c": pd.Series(text, dtype=object), "n": ints.astype(object), "y": y})
    schemas = [site_schema("s", frame, kinds) for frame in (as_codes, as_values)]
    assert schemas[0] == schemas[1]
    assert schemas[0].columns[0].levels == ("x", "z")
    assert schemas[0].columns[1].levels == ("-128", "3", "127")
    codebook = merge_schemas(schemas[:1])
    rows = [
        encode_site("s", frame, codebook, missing="drop-rows").client.rows
        for frame in (as_codes, as_values)
    ]
    pd.testing.assert_frame_equal(rows[0], rows[1])
    assert rows[0]["c"].tolist() == [0, 1, 0, 1, 1] and rows[0]["n"].tolist() == [0, 2, 0, 1, 1]


def test_integer_columns_at_the_ends_of_int64_and_wide_ones_keep_their_values() -> None:
    low, high = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    frame = pd.DataFrame(
        {
            "low": np.array([low, low + 2, low], dtype=np.int64),
            "high": np.array([high, high - 1, high], dtype=np.int64),
            "wide": np.array([0, 10**12, 5], dtype=np.int64),
        }
    )
    schema = site_schema("s", frame, dict.fromkeys(frame.columns, "categorical"))
    rows = encode_site("s", frame, merge_schemas([schema])).client.rows
    for column in schema.columns:
        assert sorted(column.levels) == sorted({str(v) for v in frame[column.name]})
        decoded = [column.levels[code] for code in rows[column.name]]
        assert decoded == [str(v) for v in frame[column.name]], column.name


# ------------------------------------------- rows that do not split, Unicode forms, Parquet
def test_a_file_mixing_delimiters_is_refused_naming_its_first_bad_line(tmp_path: Path) -> None:
    """Issue 49: ``no;no;yes`` rows in a ``,`` file were one level of ``asia`` and the
    other columns missing, without a word."""
    path = tmp_path / "mixed.csv"
    path.write_text("asia,tub,smoke\n" + "no,yes,no\n" * 20 + "no;no;yes\n" * 5)
    message = (
        f"file {path}: line 22 splits into 1 field(s) with delimiter ',', but the header "
        "has 3 columns; fix that line (the file may mix delimiters, e.g. ',' and ';' "
        "rows), or pass --set delimiter=..."
    )
    with pytest.raises(DataError, match=f"^{re.escape(message)}$"):
        read_table(path)
    with pytest.raises(DataError, match="line 22 splits into 1 field"):
        read_federation([str(path)])
    short = tmp_path / "short.csv"  # a row cut short, also in a compressed file
    with gzip.open(tmp_path / "short.csv.gz", "wt") as stream:
        stream.write('a,b,c\n1,"x, y",3\n\n4,5,\n6,7\n')
    with pytest.raises(DataError, match="line 5 splits into 2 field"):
        read_table(tmp_path / "short.csv.gz")
    # empty trailing fields, quoted delimiters and blank lines split right
    short.write_text('a,b,c\n1,"x, y",3\n\n4,5,\n  \n,,\n')
    frame = read_table(short)
    assert frame.shape == (3, 3) and frame["c"].isna().tolist() == [False, True, True]


def test_names_and_levels_are_read_in_one_unicode_form(tmp_path: Path) -> None:
    """Issue 49: ``smöke`` composed at one site and decomposed at another made two
    columns, each imputed at the other site."""
    composed, decomposed = "smöke", unicodedata.normalize("NFD", "smöke")
    assert composed != decomposed
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text(f"{composed},y\n" + "jä,1\nnein,0\n" * 6, encoding="utf-8")
    decomposed_yes = unicodedata.normalize("NFD", "jä")
    b.write_text(f"{decomposed},y\n" + f"{decomposed_yes},1\njä,1\nnein,0\n" * 6)
    schema = read_federation([str(a), str(b)]).schema
    assert schema.variables == (composed, "y")
    assert schema.levels[composed] == ("jä", "nein")
    parquet = tmp_path / "c.parquet"
    pd.DataFrame({decomposed: [decomposed_yes, "jä", None] * 4, "y": range(12)}).to_parquet(parquet)
    frame = read_table(parquet)
    assert list(frame.columns) == [composed, "y"]
    assert frame[composed].dropna().unique().tolist() == ["jä"]
    both = tmp_path / "both.csv"
    both.write_text(f"{composed},{decomposed}\n1,2\n")
    with pytest.raises(DataError, match=r"column name 'smöke' appears twice .* rename one$"):
        read_table(both)


def test_a_damaged_parquet_file_is_one_line(tmp_path: Path) -> None:
    """Issue 49: a Parquet file whose data pages are damaged was pyarrow's traceback."""
    path = tmp_path / "site.parquet"
    frame = pd.DataFrame({"a": np.arange(1000.0), "b": ["x", "y"] * 500})
    frame.to_parquet(path)
    raw = bytearray(path.read_bytes())
    raw[4:200] = bytes(b ^ 0x5A for b in raw[4:200])  # the first page; the footer is intact
    path.write_bytes(bytes(raw))
    with pytest.raises(
        DataError, match=rf"^file {re.escape(str(path))} is not a valid Parquet file: .*write"
    ):
        read_table(path)
