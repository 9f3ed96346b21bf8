"""A safe file format for a run's resume state: arrays in safetensors, the rest as JSON.

A checkpoint holds whatever a server algorithm, its grid and every client keep between
rounds: dataclasses, graphs, dicts keyed by tuples, numpy arrays. Pickle could hold
all that, but unpickling a file runs whatever code the file names, and run folders are
shared. This module writes such a *tree* of values as one safetensors file: every
numpy array (and numpy scalar) is a tensor of the file, and everything else is a JSON
document kept in the file's header metadata, where each array is referenced by its
tensor's key. Reading it back parses JSON and tensors, nothing else.

The JSON document's values are:

* JSON ``null``, ``true``/``false``, numbers and strings: Python ``None``, ``bool``,
  ``int``, finite ``float`` and ``str``; a JSON list is a Python ``list``;
* a JSON object is always a tagged node ``{"$": TAG, ...}``: ``dict`` (``items`` when
  every key is a string, else ``pairs``), ``tuple``, ``set``, ``frozenset``,
  ``float`` (``inf``, ``-inf``, ``nan``), ``bytes`` (base64), ``array`` and ``scalar``
  (the ``key`` of a tensor), or ``object``: an instance of a *registered* type, by its
  registered name and fields.

Only registered types are ever built, and only from their fields: a dataclass by its
constructor, another class by the decode function it was registered with. A name in
the file is looked up in the registry and never imported, so a file naming any other
type is refused (:class:`~fedstruct.errors.CheckpointError`). Method modules register
their state types when they are imported (:func:`register`); :class:`Graph` and
:class:`Message` are registered here.

Every file records the SHA-256 of each part of its content (:func:`seal`): the format
entries, each of the caller's header entries (``round``, ``done``, ...), the JSON tree,
and the arrays (their names, dtypes, shapes and bytes). Reading checks them first, so a
file changed after it was written (a round or a history value edited, a dtype changed)
is refused, naming the part that changed, before anything is decoded.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import math
import os
import struct
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

import numpy as np

from fedstruct import __version__
from fedstruct.errors import CheckpointError
from fedstruct.fl.message import Message
from fedstruct.graphs.graph import Graph

__all__ = [
    "FORMAT",
    "VERSION",
    "decode",
    "dumps",
    "encode",
    "loads",
    "read_header",
    "read_tree",
    "register",
    "seal",
    "write_atomically",
    "write_tree",
]

#: The ``format`` entry of every checkpoint's header.
FORMAT = "fedstruct.checkpoint"
#: Version of the layout below; a file of a newer version is refused.
VERSION = 1
#: Header metadata keys: the format, its version, the writer's version, the JSON tree,
#: the caller's own header entries (JSON) and the checksums of all of them (JSON).
_FORMAT_KEY, _VERSION_KEY, _WRITER_KEY, _TREE_KEY, _HEADER_KEY, _CHECKSUMS_KEY = (
    "format", "version", "fedstruct", "tree", "header", "sha256",
)  # fmt: skip
#: safetensors' own limit on the size of a file's JSON header.
_MAX_HEADER = 100_000_000

T = TypeVar("T")


@dataclass(frozen=True)
class _Codec:
    """How a registered type becomes fields (a tree) and is built back from them."""

    name: str
    cls: type
    to_fields: Callable[[Any], Mapping[str, Any]]
    from_fields: Callable[[dict[str, Any]], Any]


_BY_TYPE: dict[type, _Codec] = {}
_BY_NAME: dict[str, _Codec] = {}


def register(
    cls: type[T],
    *,
    name: str | None = None,
    to_fields: Callable[[T], Mapping[str, Any]] | None = None,
    from_fields: Callable[[dict[str, Any]], T] | None = None,
) -> type[T]:
    """Allow instances of ``cls`` in checkpoints.

    Parameters
    ----------
    cls
        A dataclass (saved as its constructor's fields and rebuilt by its constructor)
        or any class given with ``to_fields`` and ``from_fields``.
    name
        The name written into files (default: the class's module and qualified name;
        it is only ever looked up in this registry, never imported).
    to_fields, from_fields
        ``obj -> {field: value}`` and its inverse (required for a class that is not a
        dataclass; values are again trees of checkpointable values).

    Returns
    -------
    type
        ``cls`` (usable as a decorator).

    Raises
    ------
    TypeError
        For a class that is not a dataclass given without both functions, or a name
        already registered for another class.
    """
    if (to_fields is None) != (from_fields is None):
        raise TypeError(f"register {cls.__name__}: give both to_fields and from_fields, or neither")
    if to_fields is None:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"register {cls.__name__}: not a dataclass; give to_fields/from_fields")
        to_fields, from_fields = _dataclass_fields, _dataclass_builder(cls)
    label = name or f"{cls.__module__}.{cls.__qualname__}"
    known = _BY_NAME.get(label)
    if known is not None and known.cls is not cls:
        raise TypeError(f"checkpoint type name {label!r} is already registered for {known.cls}")
    codec = _Codec(label, cls, to_fields, from_fields)  # type: ignore[arg-type]
    _BY_TYPE[cls] = _BY_NAME[label] = codec
    return cls


def _dataclass_fields(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}


def _dataclass_builder(cls: type) -> Callable[[dict[str, Any]], Any]:
    allowed = {f.name for f in dataclasses.fields(cls) if f.init}

    def build(fields: dict[str, Any]) -> Any:
        unknown = sorted(set(fields) - allowed)
        if unknown:
            raise CheckpointError(f"{cls.__name__} has no field(s) {unknown}")
        return cls(**fields)

    return build


# ----------------------------------------------------------------- encoding


class _Encoder:
    """Turns a tree into JSON-ready data, collecting its arrays as named tensors."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def tensor(self, value: np.ndarray) -> str:
        key = f"a{len(self.arrays)}"
        array = np.asarray(value)
        if not array.dtype.isnative:
            array = array.astype(array.dtype.newbyteorder("="))
        self.arrays[key] = array if array.flags.c_contiguous else array.copy(order="C")
        return key

    def __call__(self, value: Any, where: str) -> Any:
        if value is None or type(value) in (bool, int, str):
            return value
        if type(value) is float:
            return value if math.isfinite(value) else {"$": "float", "value": repr(value)}
        if isinstance(value, (np.ndarray, np.generic)):
            return self.numeric(value, where)
        if type(value) in (list, tuple, set, frozenset, dict, MappingProxyType, bytes):
            return self.container(value, where)
        codec = _BY_TYPE.get(type(value))
        if codec is None:
            raise CheckpointError(
                f"cannot save {where}: type {type(value).__module__}.{type(value).__qualname__} "
                "is not registered for checkpoints (fedstruct.fl.checkpoint.register)"
            )
        fields = codec.to_fields(value)
        return {
            "$": "object",
            "type": codec.name,
            "fields": {k: self(v, f"{where}.{k}") for k, v in fields.items()},
        }

    def numeric(self, value: np.ndarray | np.generic, where: str) -> dict[str, str]:
        """A numpy array or scalar: a tensor of the file."""
        if value.dtype.kind not in "biuf":
            raise CheckpointError(
                f"cannot save {where}: numpy dtype {value.dtype} (numbers and booleans only)"
            )
        tag = "array" if isinstance(value, np.ndarray) else "scalar"
        return {"$": tag, "key": self.tensor(np.asarray(value))}

    def container(self, value: Any, where: str) -> Any:
        """A list, tuple, set, dict or bytes, items encoded in turn."""
        if type(value) is bytes:
            return {"$": "bytes", "base64": base64.b64encode(value).decode("ascii")}
        if type(value) is list:
            return [self(v, f"{where}[{k}]") for k, v in enumerate(value)]
        if type(value) is tuple:
            return {"$": "tuple", "items": [self(v, f"{where}[{k}]") for k, v in enumerate(value)]}
        if type(value) in (set, frozenset):
            items = [self(v, f"{where}{{}}") for v in _stable_order(value)]
            return {"$": type(value).__name__, "items": items}
        if all(type(k) is str for k in value):
            return {"$": "dict", "items": {k: self(v, f"{where}.{k}") for k, v in value.items()}}
        pairs = [[self(k, f"{where}.<key>"), self(v, f"{where}[{k!r}]")] for k, v in value.items()]
        return {"$": "dict", "pairs": pairs}


def _stable_order(items: set[Any] | frozenset[Any]) -> list[Any]:
    try:
        return sorted(items)
    except TypeError:
        return list(items)


def encode(tree: Any) -> tuple[Any, dict[str, np.ndarray]]:
    """``tree`` as JSON-ready data and its arrays (tensor key -> array).

    Raises
    ------
    CheckpointError
        If ``tree`` holds a value of a type that is not registered.
    """
    encoder = _Encoder()
    return encoder(tree, "state"), encoder.arrays


# ----------------------------------------------------------------- decoding


class _Decoder:
    """Builds a tree back from JSON data and tensors; any other input is an error."""

    def __init__(self, arrays: Mapping[str, np.ndarray]) -> None:
        self.arrays = arrays

    def __call__(self, node: Any) -> Any:
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self(v) for v in node]
        if not isinstance(node, dict):
            raise CheckpointError(f"unexpected JSON value {node!r}")
        tag = node.get("$")
        if tag == "dict":
            if "items" in node:
                return {str(k): self(v) for k, v in _object(node, "items").items()}
            return {self(k): self(v) for k, v in (_pair(p) for p in _list(node, "pairs"))}
        if tag == "tuple":
            return tuple(self(v) for v in _list(node, "items"))
        if tag in ("set", "frozenset"):
            items = (self(v) for v in _list(node, "items"))
            return set(items) if tag == "set" else frozenset(items)
        if tag == "float":
            text = node.get("value")
            if text not in ("inf", "-inf", "nan"):
                raise CheckpointError(f"a float tag holds {text!r}, not inf, -inf or nan")
            return float(text)
        if tag == "bytes":
            return base64.b64decode(str(node.get("base64", "")), validate=True)
        if tag in ("array", "scalar"):
            key = node.get("key")
            if not isinstance(key, str) or key not in self.arrays:
                raise CheckpointError(f"the tree names an array {key!r} the file does not hold")
            array = self.arrays[key]
            return array if tag == "array" else array[()]
        if tag == "object":
            name = node.get("type")
            codec = _BY_NAME.get(name) if isinstance(name, str) else None
            if codec is None:
                raise CheckpointError(
                    f"the file names type {name!r}, which is not a registered checkpoint type"
                )
            fields = {str(k): self(v) for k, v in _object(node, "fields").items()}
            return codec.from_fields(fields)
        raise CheckpointError(f"unknown tag {tag!r}")


def _list(node: dict[str, Any], key: str) -> list[Any]:
    value = node.get(key)
    if not isinstance(value, list):
        raise CheckpointError(f"a {node.get('$')!r} node has no list {key!r}")
    return value


def _object(node: dict[str, Any], key: str) -> dict[str, Any]:
    value = node.get(key)
    if not isinstance(value, dict):
        raise CheckpointError(f"a {node.get('$')!r} node has no object {key!r}")
    return value


def _pair(pair: Any) -> tuple[Any, Any]:
    if not isinstance(pair, list) or len(pair) != 2:
        raise CheckpointError(f"a dict pair is {pair!r}, not [key, value]")
    return pair[0], pair[1]


def decode(data: Any, arrays: Mapping[str, np.ndarray]) -> Any:
    """Inverse of :func:`encode`.

    Raises
    ------
    CheckpointError
        If the data are not a tree :func:`encode` writes, name an unregistered type,
        or a registered type refuses its fields.
    """
    try:
        return _Decoder(arrays)(data)
    except CheckpointError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
        raise CheckpointError(f"{type(exc).__name__}: {exc}") from exc
    except Exception as exc:  # a registered type's own validation (e.g. a GraphError)
        raise CheckpointError(f"{type(exc).__name__}: {exc}") from exc


# -------------------------------------------------------------- bytes, files


def dumps(tree: Any, header: Mapping[str, Any] | None = None) -> bytes:
    """``tree`` as the bytes of a safetensors file (``header``: the caller's own JSON
    entries, readable without decoding the tree: :func:`read_header`).

    Raises
    ------
    CheckpointError
        If ``tree`` holds a value of a type that is not registered.
    """
    from safetensors.numpy import save

    try:
        data, arrays = encode(tree)
        metadata = {
            _FORMAT_KEY: FORMAT,
            _VERSION_KEY: str(VERSION),
            _WRITER_KEY: __version__,
            _HEADER_KEY: json.dumps(dict(header or {}), allow_nan=False),
            _TREE_KEY: json.dumps(data, allow_nan=False, separators=(",", ":")),
        }
        return seal(save(arrays, metadata=metadata))
    except MemoryError:
        raise _out_of_memory(tree) from None
    except BaseException as exc:  # safetensors' Rust side panics when memory runs out
        if type(exc).__name__ != "PanicException":
            raise
        raise _out_of_memory(tree) from None


def _out_of_memory(tree: Any) -> CheckpointError:
    """The one line of a checkpoint that could not be built for lack of memory."""
    del tree
    return CheckpointError(
        "out of memory while writing the run's checkpoint: the state of this run does not "
        "fit in this machine's memory; run fewer sites in one process (a deployment puts "
        "each on its own machine), bound the search (--set depth=...), or add memory"
    )


def _split(blob: bytes, source: str) -> tuple[dict[str, Any], bytes]:
    """The JSON header of the safetensors bytes ``blob`` and the bytes of its tensors."""
    if len(blob) < 8:
        raise CheckpointError(f"{source} is not a fedstruct checkpoint (too short)")
    (size,) = struct.unpack("<Q", blob[:8])
    if size > min(_MAX_HEADER, len(blob) - 8):
        raise CheckpointError(f"{source} is not a fedstruct checkpoint (no safetensors header)")
    try:
        header = json.loads(blob[8 : 8 + size])
    except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError included
        raise CheckpointError(
            f"{source} is not a fedstruct checkpoint (unreadable header)"
        ) from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{source} is not a fedstruct checkpoint (unreadable header)")
    return header, blob[8 + size :]


def _sha256(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


def _checksums(header: Mapping[str, Any], tensors: bytes) -> dict[str, str]:
    """Part of the file -> the SHA-256 of its content: each metadata entry but the
    checksums (the caller's header entry by entry, where it is a JSON object), and
    ``arrays``: every tensor's name, dtype, shape and offsets, and the tensors' bytes."""
    metadata = header.get("__metadata__")
    metadata = metadata if isinstance(metadata, dict) else {}
    sums = {}
    for key, value in metadata.items():
        if key == _CHECKSUMS_KEY:
            continue
        entries = _json_object(value) if key == _HEADER_KEY else None
        if entries is None:
            sums[key] = _sha256(json.dumps(value))
        else:
            sums.update({f"{key}.{k}": _sha256(json.dumps(v)) for k, v in entries.items()})
    layout = {k: v for k, v in header.items() if k != "__metadata__"}
    arrays = hashlib.sha256(json.dumps(layout, sort_keys=True).encode())
    arrays.update(tensors)
    sums["arrays"] = arrays.hexdigest()
    return sums


def _json_object(text: Any) -> dict[str, Any] | None:
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def seal(blob: bytes) -> bytes:
    """The safetensors bytes ``blob`` with the checksums of their content recorded in
    the header's metadata (what :func:`dumps` writes; :func:`loads` checks them)."""
    header, tensors = _split(blob, "the checkpoint")
    metadata = dict(header.get("__metadata__") or {})
    metadata[_CHECKSUMS_KEY] = json.dumps(_checksums(header, tensors), sort_keys=True)
    text = json.dumps({**header, "__metadata__": metadata}, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the tensors stay 8-byte aligned, as safetensors puts them
    return struct.pack("<Q", len(text)) + text + tensors


def _metadata(blob: bytes, source: str) -> dict[str, str]:
    """The header metadata of the safetensors bytes ``blob``, checked to be ours and
    unchanged since it was written (its checksums)."""
    header, tensors = _split(blob, source)
    metadata = header.get("__metadata__")
    if not isinstance(metadata, dict) or metadata.get(_FORMAT_KEY) != FORMAT:
        raise CheckpointError(f'{source} is not a fedstruct checkpoint (no "format": "{FORMAT}")')
    version = metadata.get(_VERSION_KEY, "")
    if not str(version).isdigit() or int(version) > VERSION:
        raise CheckpointError(
            f"{source} is a checkpoint of format version {version!r}, newer than this "
            f"fedstruct {__version__} reads ({VERSION}); upgrade fedstruct to resume it"
        )
    _check_sums(_json_object(metadata.get(_CHECKSUMS_KEY)), _checksums(header, tensors), source)
    return metadata


#: How messages name the parts of a file (a caller's header entry by its own name).
_PART_NAMES = {_TREE_KEY: "state", "arrays": "arrays"}


def _check_sums(recorded: dict[str, Any] | None, found: dict[str, str], source: str) -> None:
    """Refuse a file whose content differs from the checksums it records.

    Raises
    ------
    CheckpointError
        Naming the parts that changed (or saying that it records no checksums).
    """
    start_again = "start the run again without --resume"
    if recorded is None:
        raise CheckpointError(
            f"{source} records no checksums of its content: it was written by an older "
            f"fedstruct or changed by hand; {start_again}"
        )
    changed = sorted(k for k in {*recorded, *found} if recorded.get(k) != found.get(k))
    if changed:
        named = [_PART_NAMES.get(k, k.removeprefix(f"{_HEADER_KEY}.")) for k in changed]
        parts = ", ".join(named[:5]) + (", ..." if len(named) > 5 else "")
        many = len(named) > 1
        raise CheckpointError(
            f"{source} was changed after fedstruct wrote it: the checksum{'s' * many} of its "
            f"{parts} {'do' if many else 'does'} not match (edited by hand or damaged); "
            f"{start_again}"
        )


def _header_of(metadata: Mapping[str, str], source: str) -> dict[str, Any]:
    try:
        header = json.loads(metadata.get(_HEADER_KEY, "{}"))
    except (ValueError, RecursionError):
        header = None
    if not isinstance(header, dict):
        raise CheckpointError(f"{source}: its header entry is not a JSON object")
    return header


def loads(blob: bytes, source: str = "the checkpoint") -> tuple[dict[str, Any], Any]:
    """The header and the tree of bytes written by :func:`dumps` (``source`` names them
    in messages).

    Raises
    ------
    CheckpointError
        If the bytes are not a fedstruct checkpoint of a version this fedstruct reads,
        or their tree is not one :func:`dumps` writes (e.g. it names an unregistered
        type); the message names ``source``.
    """
    from safetensors.numpy import load

    metadata = _metadata(blob, source)
    header = _header_of(metadata, source)
    try:
        data = json.loads(metadata.get(_TREE_KEY, "null"))
        arrays = load(blob)
    except (ValueError, RecursionError) as exc:
        raise CheckpointError(f"{source}: its state is not valid JSON ({exc})") from None
    except Exception as exc:  # safetensors' own error on a damaged tensor section
        raise CheckpointError(f"{source}: its arrays are unreadable ({exc})") from None
    try:
        return header, decode(data, arrays)
    except CheckpointError as exc:
        raise CheckpointError(f"{source} is refused: {exc}") from None


def write_tree(path: Path, tree: Any, header: Mapping[str, Any] | None = None) -> None:
    """Write ``tree`` to ``path`` atomically (a crash mid-write leaves the previous file).

    Raises
    ------
    CheckpointError
        If ``tree`` holds a value of a type that is not registered.
    """
    blob = dumps(tree, header)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, blob)


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder, so that a
    crash mid-write leaves the previous file whole."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_bytes(path: Path) -> bytes:
    if not path.is_file():
        raise CheckpointError(f"no checkpoint at {path}; start a new run without --resume")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise CheckpointError(
            f"cannot read the checkpoint {path} ({exc.strerror or exc})"
        ) from None


def read_header(path: Path) -> dict[str, Any]:
    """The caller's header entries of the checkpoint at ``path``, without its tree.

    Raises
    ------
    CheckpointError
        If the file is missing or not a fedstruct checkpoint this fedstruct reads.
    """
    return _header_of(_metadata(_read_bytes(path), str(path)), str(path))


def read_tree(path: Path) -> tuple[dict[str, Any], Any]:
    """The header and the tree of the checkpoint at ``path`` (see :func:`loads`)."""
    return loads(_read_bytes(path), str(path))


# ------------------------------------------------- the runtime's own types

register(
    Graph,
    name="fedstruct.Graph",
    to_fields=lambda g: {"names": list(g.names), "marks": np.asarray(g.marks)},
    from_fields=lambda f: Graph(f["names"], f["marks"]),
)
register(Message, name="fedstruct.Message")
