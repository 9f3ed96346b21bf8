"""A fitted estimator as two files anyone can load: ``model.safetensors`` + ``model.json``.

``model.safetensors`` holds every learned array (weights, belief and status
matrices) in the safetensors format: reading it runs no code, unlike a pickle, so a
model someone sent is safe to open. ``model.json`` holds the rest (docs/artifacts.md):

* ``format`` (``"fedstruct.model"``), ``version`` (of the format) and ``fedstruct``
  (the version that wrote it);
* ``method`` and ``params``, the estimator's constructor parameters
  (:meth:`~fedstruct.estimators.FederatedEstimator.get_params`; those that are not JSON,
  such as a participation model or public data, are named under ``not_saved`` and
  take their defaults when loaded: they shaped the training, not the model);
* ``learned``: the method's JSON part of what it learned (graphs, schemas, names);
* ``data``: the variables, their kinds and level names when the run read a user's
  files (so new rows are encoded with the same codebook), else ``null``;
* ``weights``: the weights file's name and SHA-256, checked on every read, so a
  changed or truncated file is refused;
* ``checksums``: the SHA-256 of every other entry (of each entry's entries, three
  levels deep: ``data.levels.smoke``, ``params.target``), checked on every read, so an
  entry changed since the run wrote it is refused, by name, before it is used.

Reading also checks what the checksums cannot vouch for when someone recomputed
them: the entries' types and versions, ``data``'s codebook (known kinds, level names
for exactly the categorical and ordinal variables), that it fits the parameters
(each variable's number of levels, the kind of a column read as continuous) and that
every weight is finite.

:func:`load` (``fedstruct.load``) reads a run folder back into the fitted estimator,
whose class it finds by the method's name (:func:`fedstruct.registry.estimator_class`:
it imports that method's estimator only).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedstruct import __version__
from fedstruct.data.sites.schema import KINDS, LEVELLED
from fedstruct.errors import ArtifactError, ConfigError
from fedstruct.files import TEXT_LIMIT, parse_json, read_text
from fedstruct.registry import estimator_class

__all__ = [
    "FORMAT",
    "MODEL_JSON",
    "MODEL_WEIGHTS",
    "SavedModel",
    "load",
    "read_history",
    "read_model",
    "save_model",
    "write_model_json",
]

FORMAT = "fedstruct.model"
VERSION = 1
MODEL_JSON = "model.json"
MODEL_WEIGHTS = "model.safetensors"
#: ``model.json``'s entry of checksums, and how deep into the entries they go.
CHECKSUMS = "checksums"
_CHECKSUM_DEPTH = 3
#: The largest ``model.json`` read (a FED-CD model with every round's graphs of many
#: clients over many variables stays far below).
MODEL_JSON_LIMIT = 16 * TEXT_LIMIT


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
    """Write the fitted ``model`` (a :class:`~fedstruct.estimators.FederatedEstimator`) into
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
    write_model_json(folder, document)
    return [MODEL_WEIGHTS, MODEL_JSON]


def write_model_json(folder: Path, document: Mapping[str, Any]) -> None:
    """Write ``document`` as ``folder/model.json`` with the checksums of its entries
    (replacing any it holds), computed on the entries as a reader parses them."""
    plain = json.loads(json.dumps({k: v for k, v in document.items() if k != CHECKSUMS}))
    plain[CHECKSUMS] = _checksums(plain)
    (folder / MODEL_JSON).write_text(json.dumps(plain, indent=1) + "\n")


def read_model(folder: str | Path) -> SavedModel:
    """Read the model saved in ``folder``.

    Raises
    ------
    ArtifactError
        If ``folder`` holds no saved model, ``model.json`` is not a fedstruct model,
        was written by a newer fedstruct, was changed since the run wrote it (an
        entry differs from its checksum) or holds a codebook that is not one, or the
        weights file is missing, changed or truncated (its SHA-256 differs from the
        one ``model.json`` records) or holds a weight that is not finite.
    """
    folder = _folder(folder)
    path = folder / MODEL_JSON
    document = _read_document(folder)
    _check_version(document, path)
    _check_checksums(document, path)
    if document["data"] is not None:
        _check_data(document["data"], path)
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
    _check_finite(arrays, weights)
    return SavedModel(
        method=document["method"],
        params=dict(document["params"]),
        learned=dict(document["learned"]),
        arrays=dict(arrays),
        data=document["data"],
        fedstruct=document["fedstruct"],
    )


def load(folder: str | Path) -> Any:
    """The fitted estimator (a :class:`~fedstruct.estimators.FederatedEstimator`) a
    run saved in ``folder``, as it was after ``fit``: built from the saved parameters,
    checked (its ``prepare``), then given what it learned (its ``restore``).

    The learned attributes (``graph_``, ``model_``, ...) come from ``model.json`` and
    ``model.safetensors``, ``history_`` from ``history.json``; ``data_`` is what its
    inputs are when the run read a user's files (variables, kinds, level names; or
    image shape and class names), else ``None``. Only the estimator of the run's
    method is imported.

    Raises
    ------
    ArtifactError
        If ``folder`` is not a path, holds no saved model, one written by a newer
        fedstruct, one changed since it was written (:func:`read_model`), one whose
        codebook does not fit its parameters, or a method this fedstruct does not know.
    """
    folder = _folder(folder)
    saved = read_model(folder)
    try:
        cls = estimator_class(saved.method)
    except ConfigError as exc:
        raise ArtifactError(f"{folder}: {exc}") from None
    try:
        estimator = cls(**saved.params).prepare()
        estimator.restore(saved.arrays, saved.learned)
    except (KeyError, ValueError, TypeError) as exc:
        raise ArtifactError(
            f"{folder}: model.json and model.safetensors do not fit together ({exc}); "
            "copy both files again from the run folder that wrote them"
        ) from exc
    if saved.data is not None:
        _check_fit(saved.data, saved.params, folder / MODEL_JSON)
    estimator.history_ = read_history(folder)
    estimator.data_ = saved.data
    return estimator


def _folder(folder: Any) -> Path:
    """``folder`` as a path.

    Raises
    ------
    ArtifactError
        For anything but a string or a path (``None``, a number, bytes).
    """
    if not isinstance(folder, str | os.PathLike) or "\0" in str(folder):
        raise ArtifactError(
            "a run folder is a path (a string or pathlib.Path such as 'results/my-run'), "
            f"not {reprlib.repr(folder)}"
        )
    return Path(folder)


def read_history(folder: Path) -> list[dict[str, Any]]:
    """``folder/history.json``: the run's per-round records (``[]`` if absent).

    Raises
    ------
    ArtifactError
        If it is not JSON or not a list of objects.
    """
    path = folder / "history.json"
    if not path.exists():
        return []
    text = read_text(path, "the run's history", error=ArtifactError)
    history = parse_json(text, str(path), error=ArtifactError)
    if not isinstance(history, list) or not all(isinstance(h, dict) for h in history):
        raise ArtifactError(
            f"{path} is not a list of per-round records (JSON objects); the file is damaged "
            "or was changed by hand"
        )
    return history


#: ``model.json``'s entries: name -> (the JSON types it may have, what they are).
_SCHEMA: dict[str, tuple[tuple[type, ...], str]] = {
    "version": ((int,), "a format version (a whole number)"),
    "fedstruct": ((str,), "a fedstruct version (such as 0.1.0)"),
    "method": ((str,), "a method's name"),
    "params": ((dict,), "an object"),
    "learned": ((dict,), "an object"),
    "data": ((dict, type(None)), "an object or null"),
    "weights": ((dict,), 'an object {"file": NAME, "sha256": HEX}'),
    CHECKSUMS: ((dict,), "an object of checksums"),
}
#: A fedstruct version: numbers separated by dots, then any suffix (``0.2.0rc1``).
_VERSION_TEXT = re.compile(r"\d+(\.\d+)*[0-9A-Za-z.+-]*")


def _check_schema(document: Mapping[str, Any], path: Path) -> None:
    """Every entry of ``model.json`` has the type :func:`save_model` writes.

    Raises
    ------
    ArtifactError
        Naming the first entry that is missing or of another type.
    """
    if CHECKSUMS not in document:
        raise ArtifactError(
            f"{path} records no checksums of its entries: it was written by an older "
            "fedstruct or changed by hand; run the method again to save a model with them"
        )
    for key, (types, what) in _SCHEMA.items():
        value = document.get(key)
        if key not in document or isinstance(value, bool) or not isinstance(value, types):
            found = "missing" if key not in document else f"{json.dumps(value)[:40]}"
            raise ArtifactError(
                f"{path}: {key!r} is {found}, not {what}; the file is damaged or was changed "
                "by hand: copy it again from the run folder that wrote it"
            )
    if document["version"] < 1:
        raise ArtifactError(
            f"{path}: 'version' is {document['version']}, not a format version (1 or more); "
            "the file was changed by hand: copy it again from the run folder that wrote it"
        )
    if not _VERSION_TEXT.fullmatch(document["fedstruct"]):
        raise ArtifactError(
            f"{path}: 'fedstruct' is {json.dumps(document['fedstruct'])[:40]}, not a fedstruct "
            "version (such as 0.1.0); the file was changed by hand: copy it again from the "
            "run folder that wrote it"
        )
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
    text = read_text(path, "the saved model", limit=MODEL_JSON_LIMIT, error=ArtifactError)
    document = parse_json(text, str(path), error=ArtifactError)
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ArtifactError(f'{path} is not a fedstruct model (no "format": "{FORMAT}")')
    _check_schema(document, path)
    return document


def _check_version(document: Mapping[str, Any], path: Path) -> None:
    """Refuse a model of a newer fedstruct, or of a format version this one does not know.

    Raises
    ------
    ArtifactError
        Naming the version that wrote it, or the unknown format version.
    """
    written, ours, version = str(document["fedstruct"]), __version__, int(document["version"])
    if _version_key(written) > _version_key(ours):
        raise ArtifactError(
            f"{path} was written by fedstruct {written}, newer than this fedstruct {ours}; "
            "upgrade fedstruct to load it"
        )
    if version > VERSION:
        raise ArtifactError(
            f"{path}: 'version' is {version}, a model format version that neither fedstruct "
            f"{written} (which wrote the file) nor this fedstruct {ours} knows (they know "
            f"{VERSION}): the file was changed by hand; copy it again from the run folder "
            "that wrote it"
        )


def _checksums(document: Mapping[str, Any]) -> dict[str, str]:
    """Entry -> the SHA-256 of its JSON (keys sorted), for every entry of ``document``
    but the checksums; an object whose keys are plain names (no dot) stands for its
    entries instead, down to :data:`_CHECKSUM_DEPTH` levels (``data.levels.smoke``)."""
    sums: dict[str, str] = {}

    def add(value: Any, where: str, depth: int) -> None:
        named = isinstance(value, dict) and value and all(k and "." not in k for k in value)
        if named and depth < _CHECKSUM_DEPTH:
            for key, entry in value.items():
                add(entry, f"{where}.{key}", depth + 1)
            return
        text = json.dumps(value, sort_keys=True, separators=(",", ":"))
        sums[where] = hashlib.sha256(text.encode()).hexdigest()

    for key, value in document.items():
        if key != CHECKSUMS:
            add(value, key, 1)
    return sums


def _check_checksums(document: Mapping[str, Any], path: Path) -> None:
    """Refuse a ``model.json`` whose entries differ from the checksums it records.

    Raises
    ------
    ArtifactError
        Naming the entries that changed (or were added or removed).
    """
    recorded, found = document[CHECKSUMS], _checksums(document)
    changed = sorted(k for k in {*recorded, *found} if recorded.get(k) != found.get(k))
    if changed:
        parts = ", ".join(repr(k) for k in changed[:5]) + (", ..." if len(changed) > 5 else "")
        many = len(changed) > 1
        raise ArtifactError(
            f"{path} was changed after the run wrote it: the checksum{'s' * many} of its "
            f"{parts} {'do' if many else 'does'} not match (edited by hand or damaged); copy "
            "it again from the run folder that wrote it"
        )


def _check_data(data: Mapping[str, Any], path: Path) -> None:
    """Refuse a ``data`` entry that is not a codebook :func:`save_model` writes: a
    table's variables (unique names), their kinds (:data:`KINDS`) and the level names
    of exactly the categorical and ordinal ones (unique names); or an image run's
    class names and shape.

    Raises
    ------
    ArtifactError
        Naming the entry of ``data`` that is wrong (``data.kinds.smoke``).
    """

    def refuse(where: str, value: Any, what: str) -> ArtifactError:
        return ArtifactError(
            f"{path}: 'data.{where}' is {json.dumps(value)[:60]}, not {what}; the file was "
            "changed by hand: copy it again from the run folder that wrote it"
        )

    if "classes" in data and "variables" not in data:
        if not _names(data["classes"]):
            raise refuse("classes", data["classes"], "a list of distinct class names")
        shape = data.get("shape")
        if not (isinstance(shape, list) and len(shape) == 3 and all(_count(n) for n in shape)):
            raise refuse("shape", shape, "an image shape [channels, height, width]")
        return
    variables, kinds, levels = data.get("variables"), data.get("kinds"), data.get("levels", {})
    if not _names(variables):
        raise refuse("variables", variables, "a list of distinct column names")
    if not isinstance(kinds, dict) or set(kinds) != set(variables):
        raise refuse("kinds", kinds, "an object giving each variable's kind")
    if not isinstance(levels, dict):
        raise refuse("levels", levels, "an object of each variable's level names")
    for variable in variables:
        kind = kinds[variable]
        if kind not in KINDS:
            raise refuse(f"kinds.{variable}", kind, f"a kind ({', '.join(KINDS)})")
        names = levels.get(variable)
        if kind in LEVELLED and not _names(names):
            raise refuse(f"levels.{variable}", names, f"the level names of a {kind} variable")
        if kind not in LEVELLED and names is not None:
            raise refuse(f"levels.{variable}", names, f"absent: the variable is {kind}")
    unknown = [v for v in levels if v not in kinds]
    if unknown:
        raise refuse(f"levels.{unknown[0]}", levels[unknown[0]], "absent: no such variable")


def _names(value: Any) -> bool:
    """Whether ``value`` is a non-empty list of distinct strings."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(v, str) for v in value)
        and len(set(value)) == len(value)
    )


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _check_fit(data: Mapping[str, Any], params: Mapping[str, Any], path: Path) -> None:
    """Refuse a codebook that does not fit the model's parameters (where they name
    them: FedAvg's and a CAFE table's ``cardinalities`` and ``continuous``; their
    constructors refuse a target that is not among them): each categorical or ordinal
    variable must have as many levels as the model has states for it, and each
    continuous one be continuous.

    Raises
    ------
    ArtifactError
        Naming the entries of ``model.json`` that disagree.
    """
    kinds, levels = data.get("kinds", {}), data.get("levels", {})
    cardinalities = params.get("cardinalities")
    for variable, n in (cardinalities if isinstance(cardinalities, dict) else {}).items():
        if variable in kinds and len(levels.get(variable) or ()) != n:
            raise ArtifactError(
                f"{path}: 'data.levels.{variable}' names {len(levels.get(variable) or ())} "
                f"levels, but the model has {n} states for {variable!r} "
                f"('params.cardinalities.{variable}'); the file was changed by hand: copy it "
                "again from the run folder that wrote it"
            )
    continuous = params.get("continuous")
    for variable in continuous if isinstance(continuous, list) else []:
        if kinds.get(variable, "continuous") != "continuous":
            raise ArtifactError(
                f"{path}: 'data.kinds.{variable}' is {kinds[variable]!r}, but the model reads "
                f"{variable!r} as continuous ('params.continuous'); the file was changed by "
                "hand: copy it again from the run folder that wrote it"
            )


def _check_finite(arrays: Mapping[str, NDArray[Any]], weights: Path) -> None:
    """Refuse weights that are not all finite: a model with a NaN weight predicts NaN.

    Raises
    ------
    ArtifactError
        Naming the first array with a NaN or infinite value.
    """
    for name, array in arrays.items():
        if array.dtype.kind in "fc" and not np.isfinite(array).all():
            bad = int(array.size - np.isfinite(array).sum())
            raise ArtifactError(
                f"{weights}: its array {name!r} holds {bad} value(s) that are NaN or infinite, "
                "so the model cannot predict: the training diverged (run again with a smaller "
                "learning rate) or the file was written by hand"
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
