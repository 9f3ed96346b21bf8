"""A fitted estimator as two files anyone can load: ``model.safetensors`` + ``model.json``.

``model.safetensors`` holds every learned array (weights, belief and status
matrices) in the safetensors format: reading it runs no code, unlike a pickle, so a
model someone sent is safe to open. ``model.json`` holds the rest (docs/artifacts.md):

* ``format`` (``"fedstruct.model"``), ``version`` (of the format) and ``fedstruct``
  (the version that wrote it);
* ``method`` and ``params``, the estimator's constructor parameters
  (:meth:`~fedstruct.fl.FederatedEstimator.get_params`; those that are not JSON,
  such as a participation model or public data, are named under ``not_saved`` and
  take their defaults when loaded: they shaped the training, not the model);
* ``learned``: the method's JSON part of what it learned (graphs, schemas, names);
* ``data``: the variables, their kinds and level names when the run read a user's
  files (so new rows are encoded with the same codebook), else ``null``;
* ``weights``: the weights file's name and SHA-256, checked on every read, so a
  changed or truncated file is refused.

:func:`load` (``fedstruct.load``) reads a run folder back into the fitted estimator,
whose class it finds by the method's name (:func:`fedstruct.registry.estimator_class`:
it imports that method's estimator only).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from fedstruct import __version__
from fedstruct.errors import ArtifactError, ConfigError
from fedstruct.registry import estimator_class

if TYPE_CHECKING:
    from fedstruct.fl.estimator import FederatedEstimator

__all__ = [
    "FORMAT",
    "MODEL_JSON",
    "MODEL_WEIGHTS",
    "SavedModel",
    "load",
    "read_history",
    "read_model",
    "save_model",
]

FORMAT = "fedstruct.model"
VERSION = 1
MODEL_JSON = "model.json"
MODEL_WEIGHTS = "model.safetensors"


@dataclass(frozen=True)
class SavedModel:
    """A saved model as read back (the input of ``fedstruct.load``).

    Parameters
    ----------
    method
        The method's name.
    params
        The constructor parameters that were saved.
    learned
        The method's JSON part of what it learned.
    arrays
        The learned arrays.
    data
        Variables, kinds and level names of the user's files, or ``None``.
    fedstruct
        The fedstruct version that wrote the files.
    """

    method: str
    params: dict[str, Any]
    learned: dict[str, Any]
    arrays: dict[str, NDArray[Any]]
    data: dict[str, Any] | None
    fedstruct: str


def save_model(model: Any, folder: Path, *, data: Mapping[str, Any] | None = None) -> list[str]:
    """Write the fitted ``model`` (a :class:`~fedstruct.fl.FederatedEstimator`) into
    ``folder`` as ``model.safetensors`` + ``model.json``; return the files' names.

    Parameters
    ----------
    data
        What the model's input columns are (``variables``, ``kinds``, ``levels``:
        :meth:`fedstruct.data.FederationSchema.to_config`-like), when known.
    """
    from safetensors.numpy import save_file

    arrays, learned = model.learned_state()
    weights = folder / MODEL_WEIGHTS
    save_file({k: np.ascontiguousarray(v) for k, v in arrays.items()}, str(weights))
    params, not_saved = {}, {}
    for name, value in model.get_params().items():
        if _is_json(value):
            params[name] = _plain(value)
        elif value is not None:
            not_saved[name] = type(value).__name__
    document = {
        "format": FORMAT,
        "version": VERSION,
        "fedstruct": __version__,
        "method": model.method,
        "params": params,
        "not_saved": not_saved,
        "learned": _plain(learned),
        "data": None if data is None else _plain(dict(data)),
        "weights": {"file": MODEL_WEIGHTS, "sha256": _sha256(weights)},
    }
    (folder / MODEL_JSON).write_text(json.dumps(document, indent=1) + "\n")
    return [MODEL_WEIGHTS, MODEL_JSON]


def read_model(folder: str | Path) -> SavedModel:
    """Read the model saved in ``folder``.

    Raises
    ------
    ArtifactError
        If ``folder`` holds no saved model, ``model.json`` is not a fedstruct model
        or was written by a newer fedstruct, or the weights file is missing, changed
        or truncated (its SHA-256 differs from the one ``model.json`` records).
    """
    folder = Path(folder)
    document = _read_document(folder)
    _check_version(document, folder / MODEL_JSON)
    record = document["weights"]
    weights = _weights_path(folder, record["file"])
    if not weights.is_file():
        raise ArtifactError(
            f"{weights} is missing: model.json needs its weights file beside it; copy the "
            "whole run folder"
        )
    if _sha256(weights) != record.get("sha256"):
        raise ArtifactError(
            f"{weights} does not match the checksum model.json records: the file was "
            "changed or truncated; copy it again from the run folder that wrote it"
        )
    from safetensors.numpy import load_file

    try:
        arrays = load_file(str(weights))
    except Exception as exc:  # a valid checksum over an invalid file: written that way
        raise ArtifactError(f"{weights} is not a safetensors file ({exc})") from exc
    return SavedModel(
        method=document["method"],
        params=dict(document["params"]),
        learned=dict(document["learned"]),
        arrays=dict(arrays),
        data=document["data"],
        fedstruct=document["fedstruct"],
    )


def load(folder: str | Path) -> FederatedEstimator:
    """The fitted estimator a run saved in ``folder``, as it was after ``fit``.

    The learned attributes (``graph_``, ``model_``, ...) come from ``model.json`` and
    ``model.safetensors``, ``history_`` from ``history.json``; ``data_`` is what its
    inputs are when the run read a user's files (variables, kinds, level names; or
    image shape and class names), else ``None``. Only the estimator of the run's
    method is imported.

    Raises
    ------
    ArtifactError
        If the folder holds no saved model, one written by a newer fedstruct, a
        changed or truncated weights file, or a method this fedstruct does not know.
    """
    folder = Path(folder)
    saved = read_model(folder)
    try:
        cls = estimator_class(saved.method)
    except ConfigError as exc:
        raise ArtifactError(f"{folder}: {exc}") from None
    try:
        estimator = cls(**saved.params)
        estimator.restore(saved.arrays, saved.learned)
    except (KeyError, ValueError, TypeError) as exc:
        raise ArtifactError(
            f"{folder}: model.json and model.safetensors do not fit together ({exc}); "
            "copy both files again from the run folder that wrote them"
        ) from exc
    estimator.history_ = read_history(folder)
    estimator.data_ = saved.data
    return estimator  # type: ignore[no-any-return]


def read_history(folder: Path) -> list[dict[str, Any]]:
    """``folder/history.json``: the run's per-round records (``[]`` if absent).

    Raises
    ------
    ArtifactError
        If it is not JSON or not a list of objects.
    """
    path = folder / "history.json"
    if not path.is_file():
        return []
    try:
        history = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as exc:
        raise ArtifactError(f"{path} is not valid JSON ({exc}); the file is damaged") from None
    if not isinstance(history, list) or not all(isinstance(h, dict) for h in history):
        raise ArtifactError(
            f"{path} is not a list of per-round records (JSON objects); the file is damaged "
            "or was changed by hand"
        )
    return history


#: ``model.json``'s entries: name -> (the JSON types it may have, what they are).
_SCHEMA: dict[str, tuple[tuple[type, ...], str]] = {
    "version": ((int,), "an integer"),
    "fedstruct": ((str,), "a version string"),
    "method": ((str,), "a method's name"),
    "params": ((dict,), "an object"),
    "learned": ((dict,), "an object"),
    "data": ((dict, type(None)), "an object or null"),
    "weights": ((dict,), 'an object {"file": NAME, "sha256": HEX}'),
}


def _check_schema(document: Mapping[str, Any], path: Path) -> None:
    """Every entry of ``model.json`` has the type :func:`save_model` writes.

    Raises
    ------
    ArtifactError
        Naming the first entry that is missing or of another type.
    """
    for key, (types, what) in _SCHEMA.items():
        value = document.get(key)
        if key not in document or isinstance(value, bool) or not isinstance(value, types):
            found = "missing" if key not in document else f"{json.dumps(value)[:40]}"
            raise ArtifactError(
                f"{path}: {key!r} is {found}, not {what}; the file is damaged or was changed "
                "by hand: copy it again from the run folder that wrote it"
            )
    if document["version"] < 1:
        raise ArtifactError(f"{path}: 'version' is {document['version']}, not a format version")
    record = document["weights"]
    name, digest = record.get("file"), record.get("sha256")
    if not isinstance(name, str) or not isinstance(digest, str) or len(digest) != 64:
        raise ArtifactError(
            f'{path}: "weights" is not {{"file": NAME, "sha256": 64 hex digits}}; the file '
            "is damaged or was changed by hand"
        )


def _weights_path(folder: Path, name: str) -> Path:
    """The weights file ``model.json`` names: a plain file name in ``folder``.

    Raises
    ------
    ArtifactError
        For a name with a folder part (``/``, ``..``, an absolute path) or one that
        leads out of ``folder`` (a link).
    """
    plain = name not in ("", ".", "..") and not any(c in name for c in "/\\\0")
    path = folder / name
    if not plain or (path.exists() and path.resolve().parent != folder.resolve()):
        raise ArtifactError(
            f"{folder / MODEL_JSON} names the weights file {name!r}, which is not a file in "
            "the run folder; the weights must lie beside model.json (e.g. model.safetensors)"
        )
    return path


def _read_document(folder: Path) -> dict[str, Any]:
    path = folder / MODEL_JSON
    if not folder.is_dir():
        raise ArtifactError(f"{folder} is not a folder; give the --out folder of a fedstruct run")
    if not path.is_file():
        raise ArtifactError(
            f"{folder} holds no saved model ({MODEL_JSON}); give the --out folder of a "
            "finished 'fedstruct run'"
        )
    try:
        document = json.loads(path.read_text())
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError
        raise ArtifactError(f"{path} is not valid JSON ({exc}); the file is damaged") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ArtifactError(f'{path} is not a fedstruct model (no "format": "{FORMAT}")')
    _check_schema(document, path)
    return document


def _check_version(document: Mapping[str, Any], path: Path) -> None:
    written, ours = str(document["fedstruct"]), __version__
    if _version_key(written) > _version_key(ours) or int(document["version"]) > VERSION:
        raise ArtifactError(
            f"{path} was written by fedstruct {written}, newer than this fedstruct {ours}; "
            "upgrade fedstruct to load it"
        )


def _version_key(version: str) -> tuple[int, ...]:
    parts = []
    for part in version.split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _is_json(value: Any) -> bool:
    if value is None or isinstance(value, (str, bool, int, float, np.integer, np.floating)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_is_json(v) for v in value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _is_json(v) for k, v in value.items())
    return False


def _plain(value: Any) -> Any:
    """``value`` with numpy scalars as Python numbers and tuples as lists (JSON)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value
