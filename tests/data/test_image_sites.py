"""A site's own images: folder and npz readers, schemas, the class codebook, the client."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from fedstruct.data import ClientData
from fedstruct.data.images import (
    LABEL,
    ImageFederationSchema,
    ImageSite,
    ImageSiteSchema,
    class_order,
    from_rows,
    image_client,
    merge_image_schemas,
    read_image_folder,
    read_image_npz,
    read_image_site,
)
from fedstruct.errors import DataError, UnknownVariableError
from fedstruct.fl.message import Message


def unit(x: np.ndarray) -> np.ndarray:
    """The oracle for byte scaling: float32 division by 255."""
    return x.astype(np.float32) / np.float32(255)


def save(path: Path, pixels: np.ndarray, mode: str | None = None) -> Path:
    """Write ``pixels`` (H, W) or (H, W, C) with Pillow; the format follows the suffix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.fromarray(pixels) if mode is None else Image.fromarray(pixels, mode=mode)
    image.save(path)
    return path


def grey(seed: int, h: int = 4, w: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w), dtype=np.uint8)


def colour(seed: int, h: int = 4, w: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


@pytest.fixture
def grey_site(tmp_path: Path) -> tuple[Path, dict[str, np.ndarray]]:
    """hospital/{benign,malignant}/*.png, grey 4x5; written out of order."""
    site = tmp_path / "hospital"
    arrays = {
        "malignant/b.png": grey(1),
        "benign/z.png": grey(2),
        "malignant/a.png": grey(3),
        "benign/m.png": grey(4),
        "benign/a.png": grey(5),
    }
    for rel, pixels in arrays.items():
        save(site / rel, pixels)
    return site, arrays


# ------------------------------------------------------------------------- folder reader
def test_folder_png_round_trip_is_exact_and_sorted(grey_site) -> None:
    site_dir, arrays = grey_site
    site = read_image_folder(site_dir)
    order = ["benign/a.png", "benign/m.png", "benign/z.png", "malignant/a.png", "malignant/b.png"]
    assert site.name == "hospital"
    assert site.shape == (1, 4, 5) and site.n_images == 5
    assert site.images.dtype == np.float32
    np.testing.assert_array_equal(site.images, np.stack([unit(arrays[r])[None] for r in order]))
    assert site.labels.tolist() == ["benign"] * 3 + ["malignant"] * 2
    assert site.classes == ("benign", "malignant")
    with pytest.raises(ValueError, match="read-only"):
        site.images[0, 0, 0, 0] = 0.5


def test_folder_rgb_png_is_channel_first(tmp_path: Path) -> None:
    pixels = colour(7)
    save(tmp_path / "s" / "cat" / "1.png", pixels)
    save(tmp_path / "s" / "dog" / "1.PNG", colour(8))
    site = read_image_folder(tmp_path / "s", name="clinic")
    assert site.name == "clinic" and site.shape == (3, 4, 5)
    np.testing.assert_array_equal(site.images[0], unit(pixels).transpose(2, 0, 1))
    assert site.images[0, 2, 3, 1] == np.float32(pixels[3, 1, 2]) / np.float32(255)
    assert site.labels.tolist() == ["cat", "dog"]


def test_folder_jpeg_is_decoded(tmp_path: Path) -> None:
    flat = np.full((8, 8, 3), (200, 40, 90), dtype=np.uint8)
    save(tmp_path / "s" / "a" / "x.jpg", flat)
    save(tmp_path / "s" / "b" / "y.JPEG", flat)
    site = read_image_folder(tmp_path / "s")
    assert site.shape == (3, 8, 8) and site.labels.tolist() == ["a", "b"]
    # lossy, but a flat colour comes back within a few grey levels
    expected = unit(flat).transpose(2, 0, 1)
    assert np.abs(site.images - expected).max() <= 4 / 255


def test_folder_modes_are_converted(tmp_path: Path) -> None:
    wide = np.array([[0, 1, 65535], [32768, 300, 7]], dtype=np.uint16)
    save(tmp_path / "w" / "c" / "x.png", wide)  # 16-bit grey PNG
    got = read_image_folder(tmp_path / "w").images[0, 0]
    np.testing.assert_array_equal(got, wide.astype(np.float32) / np.float32(65535))
    assert got[0, 2] == 1.0

    rgba = np.concatenate([colour(9), np.full((4, 5, 1), 17, np.uint8)], axis=2)
    save(tmp_path / "a" / "c" / "x.png", rgba, mode="RGBA")
    got = read_image_folder(tmp_path / "a").images[0]
    np.testing.assert_array_equal(got, unit(rgba[..., :3]).transpose(2, 0, 1))  # alpha dropped

    la = np.stack([grey(10), np.zeros((4, 5), np.uint8)], axis=2)
    save(tmp_path / "la" / "c" / "x.png", la, mode="LA")
    np.testing.assert_array_equal(read_image_folder(tmp_path / "la").images[0, 0], unit(la[..., 0]))

    palette = Image.fromarray(colour(11)).quantize(colors=8)
    (tmp_path / "p" / "c").mkdir(parents=True)
    palette.save(tmp_path / "p" / "c" / "x.png")
    got = read_image_folder(tmp_path / "p").images[0]
    np.testing.assert_array_equal(got, unit(np.asarray(palette.convert("RGB"))).transpose(2, 0, 1))


def test_hidden_entries_are_skipped(grey_site) -> None:
    site_dir, _ = grey_site
    (site_dir / ".DS_Store").write_bytes(b"junk")
    (site_dir / "benign" / ".notes.txt").write_text("x")
    save(site_dir / ".cache" / "old.png", grey(0, 9, 9))
    site = read_image_folder(site_dir)
    assert site.n_images == 5 and site.classes == ("benign", "malignant")


def test_integer_class_names_sort_by_number(tmp_path: Path) -> None:
    for cls in ("10", "2", "1"):
        save(tmp_path / "s" / cls / "x.png", grey(int(cls)))
    site = read_image_folder(tmp_path / "s")
    assert site.classes == ("1", "2", "10")
    assert class_order(["b", "10", "2"]) == ("10", "2", "b")
    assert class_order(["-1", "01", "1", "0"]) == ("-1", "0", "01", "1")


def test_read_image_site_dispatches(grey_site, tmp_path: Path) -> None:
    site_dir, _ = grey_site
    assert read_image_site(site_dir).n_images == 5
    np.savez(tmp_path / "s.npz", images=np.zeros((2, 3, 3), np.uint8), labels=np.array([0, 1]))
    site = read_image_site(tmp_path / "s.npz")
    assert site.name == "s" and site.shape == (1, 3, 3)


# --------------------------------------------------------------------------- npz reader
def test_npz_uint8_grey_and_integer_labels(tmp_path: Path) -> None:
    raw = np.random.default_rng(0).integers(0, 256, (3, 4, 5), dtype=np.uint8)
    np.savez(tmp_path / "ward.npz", images=raw, labels=np.array([3, 0, 12]))
    site = read_image_npz(tmp_path / "ward.npz")
    assert site.name == "ward" and site.shape == (1, 4, 5)
    np.testing.assert_array_equal(site.images, unit(raw)[:, None])
    assert site.labels.tolist() == ["3", "0", "12"]
    assert site.classes == ("0", "3", "12")


def test_npz_layouts(tmp_path: Path) -> None:
    nhwc = np.random.default_rng(1).integers(0, 256, (2, 4, 5, 3), dtype=np.uint8)
    np.savez(tmp_path / "hwc.npz", images=nhwc, labels=np.array(["a", "b"]))
    site = read_image_npz(tmp_path / "hwc.npz")
    assert site.shape == (3, 4, 5)
    np.testing.assert_array_equal(site.images, unit(nhwc).transpose(0, 3, 1, 2))
    assert site.images.flags.c_contiguous

    nchw = np.random.default_rng(2).random((2, 1, 4, 5)).astype(np.float64)
    np.savez(tmp_path / "chw.npz", images=nchw, labels=np.array([b"x", b"y"]))
    site = read_image_npz(tmp_path / "chw.npz")
    np.testing.assert_array_equal(site.images, nchw.astype(np.float32))
    assert site.labels.tolist() == ["x", "y"]

    ambiguous = np.zeros((2, 3, 4, 3), np.uint8)  # both axis 1 and axis 3 could be C
    np.savez(tmp_path / "amb.npz", images=ambiguous, labels=np.array([0, 1]))
    assert read_image_npz(tmp_path / "amb.npz").shape == (3, 4, 3)  # channels first


# ----------------------------------------------------------------------------- schemas
def test_site_schema_counts_and_config_round_trip(grey_site) -> None:
    site = read_image_folder(grey_site[0])
    schema = site.schema()
    assert schema == ImageSiteSchema("hospital", 5, (1, 4, 5), ("benign", "malignant"), (3, 2))
    config = schema.to_config()
    assert config == {
        "site": "hospital",
        "n_images": 5,
        "shape": [1, 4, 5],
        "classes": ["benign", "malignant"],
        "counts": [3, 2],
    }
    assert ImageSiteSchema.from_config(json.loads(json.dumps(config))) == schema
    Message("images.schema", config=config)  # a valid message config as it stands


def test_schema_json_holds_no_pixels_or_per_image_labels(tmp_path: Path) -> None:
    images = np.zeros((4, 1, 3, 3), np.float32)
    images[2, 0, 1, 1] = 0.6180339  # a distinctive value
    np.savez(tmp_path / "s.npz", images=images, labels=np.array(["x", "y", "x", "x"]))
    site = read_image_npz(tmp_path / "s.npz")
    assert site.images[2, 0, 1, 1] == np.float32(0.6180339)
    text = json.dumps(site.schema().to_config())
    assert "618" not in text
    assert text.count('"x"') == 1  # class names once, not one label per image
    federation = merge_image_schemas([site.schema()])
    assert "618" not in json.dumps(federation.to_config())


def test_merge_builds_the_codebook_and_round_trips() -> None:
    a = ImageSiteSchema("a", 5, (1, 4, 4), ("10", "2"), (1, 4))
    b = ImageSiteSchema("b", 3, (1, 4, 4), ("1", "2"), (2, 1))
    fed = merge_image_schemas([a, b])
    assert fed.classes == ("1", "2", "10") and fed.n_classes == 3
    assert fed.shape == (1, 4, 4) and fed.sites == {"a": 5, "b": 3}
    assert merge_image_schemas([b, a]).classes == fed.classes  # order-free
    config = fed.to_config()
    assert config == {
        "shape": [1, 4, 4],
        "classes": ["1", "2", "10"],
        "site_names": ["a", "b"],
        "site_images": [5, 3],
    }
    assert ImageFederationSchema.from_config(json.loads(json.dumps(config))) == fed
    Message("images.federation", config=config)
    c = ImageSiteSchema("c", 1, (1, 4, 4), ("cat",), (1,))
    assert merge_image_schemas([a, c]).classes == ("10", "2", "cat")  # lexicographic
    np.testing.assert_array_equal(fed.codes(np.array(["10", "1", "2", "10"])), [2, 0, 1, 2])


# ------------------------------------------------------------------------------ client
def test_image_client_codes_labels_by_the_federation(tmp_path: Path) -> None:
    np.savez(tmp_path / "a.npz", images=np.zeros((2, 2, 2), np.uint8), labels=np.array([7, 2]))
    raw = np.arange(3 * 4, dtype=np.uint8).reshape(3, 2, 2) * 20
    np.savez(tmp_path / "b.npz", images=raw, labels=np.array([0, 7, 0]))
    a, b = read_image_npz(tmp_path / "a.npz"), read_image_npz(tmp_path / "b.npz")
    fed = merge_image_schemas([a.schema(), b.schema()])
    assert fed.classes == ("0", "2", "7")
    client = image_client(b, fed)
    assert isinstance(client, ClientData)
    assert client.name == "b" and client.supervised == (LABEL,)
    assert client.rows[LABEL].tolist() == [0, 2, 0]
    assert client.rows.shape == (3, 5)
    images, codes = from_rows(client.rows, fed.shape)
    np.testing.assert_array_equal(images, unit(raw)[:, None])
    assert codes.tolist() == [0, 2, 0]
    assert image_client(a, fed).rows[LABEL].tolist() == [2, 1]


def test_image_client_rejects_a_foreign_codebook_or_shape() -> None:
    site = ImageSite("s", np.zeros((2, 1, 2, 2), np.float32), np.array(["cat", "owl"]))
    fed = ImageFederationSchema((1, 2, 2), ("cat", "dog"), {"s": 2})
    with pytest.raises(
        UnknownVariableError,
        match=re.escape("image site 's' has classes ['owl'] that the federation's codebook"),
    ):
        image_client(site, fed)
    with pytest.raises(DataError, match=re.escape("has images of shape (1, 2, 2) but the fed")):
        image_client(site, ImageFederationSchema((3, 2, 2), ("cat", "owl"), {"s": 2}))
    with pytest.raises(UnknownVariableError, match="class 'owl' is not in the federation's"):
        fed.codes(["owl"])


# ------------------------------------------------------------------------------ errors
def test_folder_errors(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(
        DataError, match=re.escape(f"image site folder {missing} does not exist; expected")
    ):
        read_image_folder(missing)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=r"site folder .*empty has no class sub-folders; expected"):
        read_image_folder(tmp_path / "empty")
    (tmp_path / "s" / "benign").mkdir(parents=True)
    with pytest.raises(DataError, match=r"class folder .*benign holds no images; add \.png"):
        read_image_folder(tmp_path / "s")
    save(tmp_path / "s" / "benign" / "x.png", grey(0))
    (tmp_path / "s" / "benign" / "notes.txt").write_text("hi")
    with pytest.raises(
        DataError, match=r"notes\.txt is not a \.png, \.jpg or \.jpeg image; remove"
    ):
        read_image_folder(tmp_path / "s")
    (tmp_path / "s" / "benign" / "notes.txt").unlink()
    (tmp_path / "s" / "README.md").write_text("hi")
    with pytest.raises(DataError, match=r"README\.md is a file outside any class folder of site"):
        read_image_folder(tmp_path / "s")
    (tmp_path / "s" / "README.md").unlink()
    (tmp_path / "s" / "benign" / "sub").mkdir()
    with pytest.raises(DataError, match="sub is a folder inside class folder"):
        read_image_folder(tmp_path / "s")


def test_undecodable_image_is_named(tmp_path: Path) -> None:
    save(tmp_path / "s" / "a" / "good.png", grey(0))
    bad = tmp_path / "s" / "a" / "broken.png"
    bad.write_bytes(b"\x89PNG not really")
    with pytest.raises(DataError, match=f"{re.escape(str(bad))} cannot be decoded as an image"):
        read_image_folder(tmp_path / "s")


def test_size_and_channel_mismatch_name_both_files(tmp_path: Path) -> None:
    first = save(tmp_path / "s" / "a" / "1.png", grey(0, 4, 5))
    other = save(tmp_path / "s" / "b" / "2.png", grey(1, 6, 5))
    message = f"{other} is (C, H, W) = (1, 6, 5) but {first} is (1, 4, 5); every image"
    with pytest.raises(DataError, match=re.escape(message)):
        read_image_folder(tmp_path / "s")
    other.unlink()
    save(tmp_path / "s" / "b" / "2.png", colour(1, 4, 5))
    message = f"{other} is (C, H, W) = (3, 4, 5) but {first} is (1, 4, 5)"
    with pytest.raises(DataError, match=re.escape(message)):
        read_image_folder(tmp_path / "s")


def test_npz_errors(tmp_path: Path) -> None:
    path = tmp_path / "s.npz"
    np.savez(path, pictures=np.zeros((2, 3, 3), np.uint8), labels=np.array([0, 1]))
    with pytest.raises(DataError, match=r"s\.npz has no 'images' array \(it has \['labels', 'pic"):
        read_image_npz(path)
    np.savez(path, images=np.zeros((2, 3, 3), np.uint8), y=np.array([0, 1]))
    with pytest.raises(DataError, match=r"s\.npz has no 'labels' array .* np\.savez\(path, images"):
        read_image_npz(path)
    np.savez(path, images=np.zeros((2, 3, 3), np.uint8), labels=np.array([0, 1, 1]))
    with pytest.raises(DataError, match=r"s\.npz holds 2 images but 3 labels; give one label"):
        read_image_npz(path)
    np.savez(path, images=np.full((2, 3, 3), 1.5), labels=np.array([0, 1]))
    with pytest.raises(DataError, match=r"float 'images' must lie in \[0, 1\] \(got min 1\.5"):
        read_image_npz(path)
    np.savez(path, images=np.full((2, 3, 3), np.nan), labels=np.array([0, 1]))
    with pytest.raises(DataError, match=r"must lie in \[0, 1\] \(got min nan"):
        read_image_npz(path)
    np.savez(path, images=np.zeros((2, 3, 3), np.int64), labels=np.array([0, 1]))
    with pytest.raises(DataError, match=r"'images' has dtype int64; save uint8 bytes 0\.\.255"):
        read_image_npz(path)
    np.savez(path, images=np.zeros((2, 4, 5, 6), np.uint8), labels=np.array([0, 1]))
    with pytest.raises(DataError, match=r"'images' has shape \(2, 4, 5, 6\); expected \(N, H, W\)"):
        read_image_npz(path)
    np.savez(path, images=np.zeros((2, 3, 3), np.uint8), labels=np.array([0.0, 1.0]))
    with pytest.raises(DataError, match="'labels' has dtype float64; save integer labels"):
        read_image_npz(path)
    with pytest.raises(
        DataError, match=r"image site file .*gone\.npz does not exist; check the path"
    ):
        read_image_npz(tmp_path / "gone.npz")
    (tmp_path / "junk.npz").write_bytes(b"garbage")
    with pytest.raises(DataError, match=r"junk\.npz cannot be read as an \.npz archive \(it looks"):
        read_image_npz(tmp_path / "junk.npz")
    np.save(tmp_path / "one.npy", np.zeros(3))
    (tmp_path / "one.npy").rename(tmp_path / "one.npz")
    with pytest.raises(DataError, match=r"one\.npz holds one array, not an \.npz archive"):
        read_image_npz(tmp_path / "one.npz")


def test_read_image_site_errors(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"image site .*nowhere does not exist; give a folder"):
        read_image_site(tmp_path / "nowhere")
    (tmp_path / "table.csv").write_text("a,b\n")
    with pytest.raises(DataError, match=r"table\.csv is neither a folder of class sub-folders"):
        read_image_site(tmp_path / "table.csv")


def test_merge_and_schema_errors() -> None:
    a = ImageSiteSchema("north", 2, (1, 8, 8), ("x",), (2,))
    b = ImageSiteSchema("south", 2, (3, 8, 8), ("x",), (2,))
    message = (
        "site 'south' has images of shape (C, H, W) = (3, 8, 8) but site 'north' has (1, 8, 8)"
    )
    with pytest.raises(DataError, match=re.escape(message)):
        merge_image_schemas([a, b])
    with pytest.raises(
        DataError, match=re.escape("site names must be unique; repeated: ['north']")
    ):
        merge_image_schemas([a, a])
    with pytest.raises(DataError, match="needs at least one site's schema"):
        merge_image_schemas([])
    with pytest.raises(DataError, match="counts must be one positive int per class"):
        ImageSiteSchema("n", 3, (1, 8, 8), ("x",), (2,))
    with pytest.raises(DataError, match=r"image site schema config has no 'counts'"):
        ImageSiteSchema.from_config({"site": "n", "n_images": 2, "shape": [1, 8, 8], "classes": []})
    with pytest.raises(DataError, match=r"site_names .* must be unique and match site_images"):
        ImageFederationSchema.from_config(
            {"shape": [1, 2, 2], "classes": ["x"], "site_names": ["a"], "site_images": [1, 2]}
        )


def test_image_site_validates() -> None:
    x = np.zeros((2, 1, 2, 2), np.float32)
    with pytest.raises(
        DataError, match="labels must be class names \\(strings\\), got dtype int64"
    ):
        ImageSite("s", x, np.array([0, 1]))
    with pytest.raises(DataError, match="labels have shape \\(3,\\) but there are 2 images"):
        ImageSite("s", x, np.array(["a", "b", "c"]))
    with pytest.raises(DataError, match="image site 's': label 1 is an empty string"):
        ImageSite("s", x, np.array(["a", ""]))
    with pytest.raises(DataError, match=r"image site 's': images must lie in \[0, 1\]"):
        ImageSite("s", x + 2, np.array(["a", "b"]))


def test_a_named_pipe_is_refused_not_waited_on(tmp_path: Path) -> None:
    site = tmp_path / "site"
    save(site / "cat" / "a.png", np.zeros((4, 4), dtype=np.uint8))
    os.mkfifo(site / "cat" / "b.png")
    with pytest.raises(DataError, match=r"image .*b.png is a named pipe \(FIFO\), not a regular"):
        read_image_site(site)
    os.mkfifo(tmp_path / "site.npz")
    with pytest.raises(DataError, match=r"image site file .*site.npz is a named pipe \(FIFO\)"):
        read_image_site(tmp_path / "site.npz")
