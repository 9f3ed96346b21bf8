"""Images as a data set type (ImageSet) and as client rows."""

from __future__ import annotations

import numpy as np
import pytest

from fedstruct.data.images import LABEL, ImageSet, from_rows, pixel_columns, to_rows
from fedstruct.errors import DataError, UnknownVariableError


def test_image_set_validates_and_is_read_only() -> None:
    x = np.zeros((4, 1, 2, 2), np.float32)
    y = np.array([0, 1, 1, 0], np.int64)
    s = ImageSet("tiny", x, y, x[:2], y[:2], ("a", "b"))
    assert s.shape == (1, 2, 2) and s.n_classes == 2
    with pytest.raises(ValueError, match="read-only"):
        s.train_images[0, 0, 0, 0] = 1.0
    x[0, 0, 0, 0] = 0.5  # the caller's array stays writeable
    with pytest.raises(DataError, match="train_images must be a float32 array"):
        ImageSet("tiny", x.astype(np.float64), y, x, y, ("a", "b"))
    with pytest.raises(DataError, match=r"test_labels range over 0..2 but there are 2 classes"):
        ImageSet("tiny", x, y, x, np.array([0, 1, 2, 0]), ("a", "b"))
    with pytest.raises(DataError, match="train_images must lie in"):
        ImageSet("tiny", x * 3, y, x, y, ("a", "b"))
    with pytest.raises(DataError, match=r"train_labels has shape \(3,\) but there are 4"):
        ImageSet("tiny", x, y[:3], x, y, ("a", "b"))
    with pytest.raises(DataError, match=r"train images are \(1, 2, 2\) but test images"):
        ImageSet("tiny", x, y, np.zeros((4, 1, 2, 3), np.float32), y, ("a", "b"))
    with pytest.raises(DataError, match="classes must be unique"):
        ImageSet("tiny", x, y, x, y, ("a", "a"))


def test_rows_round_trip_and_column_order() -> None:
    rng = np.random.default_rng(0)
    images = rng.random((5, 3, 2, 4), dtype=np.float32)
    labels = np.array([4, 0, 2, 2, 1])
    rows = to_rows(images, labels)
    assert list(rows.columns) == [*pixel_columns((3, 2, 4)), LABEL]
    assert pixel_columns((3, 2, 4))[-1] == "px_23"
    assert rows[LABEL].dtype == np.int64 and rows["px_0"].dtype == np.float32
    # px_{(c*H + y)*W + x}: channel 2, row 1, column 3 -> (2*2 + 1)*4 + 3 = 23.
    assert rows.loc[3, "px_23"] == images[3, 2, 1, 3]
    assert rows.loc[1, "px_9"] == images[1, 1, 0, 1]
    back_x, back_y = from_rows(rows, (3, 2, 4))
    assert back_x.dtype == np.float32 and back_y.dtype == np.int64
    assert np.array_equal(back_x, images) and back_y.tolist() == labels.tolist()
    with pytest.raises(UnknownVariableError, match=r"no pixel column 'px_7' \(1 of 24 missing\)"):
        from_rows(rows.drop(columns="px_7"), (3, 2, 4))
    with pytest.raises(UnknownVariableError, match="no 'label' column"):
        from_rows(rows.drop(columns=LABEL), (3, 2, 4))
    with pytest.raises(DataError, match="three positive ints"):
        from_rows(rows, (3, 8))
    with pytest.raises(DataError, match="one integer per image"):
        to_rows(images, labels[:4])
