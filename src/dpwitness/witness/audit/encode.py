"""Outputs of any shape as rows of numbers (:class:`Encoder`): the view every event family reads."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from dpwitness.common.encoding import frame_columns
from dpwitness.witness.audit.result import MechanismError
from dpwitness.witness.events import Alignment, Path
from dpwitness.witness.workers import PLAIN_BOOLEANS, PLAIN_NUMBERS

FloatArray = npt.NDArray[np.float64]


class Encoder:
    """Outputs of any shape as rows of numbers: ``[shape code, number of values, v₀, v₁, …]``.

    Numbers and booleans are values (±∞ included); strings, None and other hashable objects get a
    code (the same object always gets the same code); tuples, lists, dicts and arrays are walked in
    order, and a data frame (Polars, pandas) as the dict of its columns. The shape code names the
    nesting and kinds (``(n,n,b)``, ``[s,∅]``…); positions a
    shorter output does not have are NaN, which the events read as "missing"; a NaN the mechanism
    returns is an outcome: the shape code marks it (``N``, or ``·NaN@[positions]`` in an array). While every output has
    the same shape, the shape and length columns carry nothing and are left out of the view.

    ``shape_code(signature)`` numbers a shape signature (the same signature, the same code, from
    0 in order of first sight). ``rows(outputs, label)`` encodes a sequence of outputs as one
    NaN-padded float array; ``encode(output, label)`` one output as (its signature, its values).
    ``label`` names the input (``"d"``, ``"d_prime"``) in the error raised for an output that
    cannot be encoded.
    """

    def __init__(self) -> None:
        self.shapes: dict[str, int] = {}
        self.symbols: dict[tuple[str, Any], int] = {}
        self.paths: dict[int, tuple[Path, ...]] = {}  # shape code → the path of each value (rows() only)

    @property
    def structured(self) -> bool:
        return len(self.shapes) > 1

    def shape_code(self, signature: str) -> float:
        return float(self.shapes.setdefault(signature, len(self.shapes)))

    def rows(self, outputs: Sequence[Any], label: str) -> FloatArray:
        nested = self._nested_rows(outputs, label)
        if nested is not None:
            return nested
        encoded = [self.encode(output, label) for output in outputs]
        width = max((len(values) for _, values in encoded), default=0)
        rows = np.full((len(encoded), 2 + width), np.nan)
        for i, (signature, values) in enumerate(encoded):
            self._remember(signature, outputs[i])
            rows[i, 0] = self.shape_code(signature)
            rows[i, 1] = len(values)
            rows[i, 2 : 2 + len(values)] = values
        return rows

    def _nested_rows(self, outputs: Sequence[Any], label: str) -> FloatArray | None:
        """Rows for tuples or lists whose items are plain numbers and booleans or sequences of them
        (a tuple of two sparse vectors' answers), stacked group by group of one layout at numpy speed,
        with the codes and values the walk gives; None for any other output."""
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, output in enumerate(outputs):
            if type(output) not in _SEQUENCES:
                return None
            groups.setdefault(tuple(tuple(map(type, p)) if type(p) in _SEQUENCES else type(p) for p in output), []).append(i)
        width = 0
        layouts: list[tuple[str, list[int], int]] = []
        for key, members in groups.items():
            leaves = [t for part in key for t in (part if isinstance(part, tuple) else (part,))]
            if not all(t in PLAIN_NUMBERS or t in PLAIN_BOOLEANS for t in leaves):
                return None
            kinds = ["(" + ",".join(map(_kind_of, part)) + ")" if isinstance(part, tuple) else _kind_of(part) for part in key]
            layouts.append(("(" + ",".join(kinds) + ")", members, len(leaves)))
            width = max(width, len(leaves))
        rows = np.full((len(outputs), 2 + width), np.nan)
        for signature, members, count in layouts:
            index = np.asarray(members)
            flat = [[v for part in outputs[i] for v in (part if type(part) in _SEQUENCES else (part,))] for i in members]
            values = np.asarray(flat, dtype=np.float64).reshape(len(members), count)
            nan = np.isnan(values).any(axis=1)
            for r in np.flatnonzero(nan):  # a NaN output has its own shape: the walk's signature
                marked, _ = self.encode(outputs[members[r]], label)
                self._remember(marked, outputs[members[r]])
                rows[index[r], 0] = self.shape_code(marked)
            if not nan.all():
                self._remember(signature, outputs[members[int(np.argmin(nan))]])
                rows[index[~nan], 0] = self.shape_code(signature)
            rows[index, 1] = count
            rows[index, 2 : 2 + count] = values
        return rows

    def _remember(self, signature: str, output: Any) -> None:
        if signature not in self.shapes:
            self.paths[int(self.shape_code(signature))] = tuple(value_paths(output))

    def alignment(self) -> Alignment | None:
        """The :class:`Alignment` of the shapes seen so far (None: flat, or some shape's paths unknown)."""
        if not self.structured or any(code not in self.paths for code in self.shapes.values()):
            return None
        return Alignment.of(self.paths)

    def encode(self, output: Any, label: str) -> tuple[str, list[float]]:
        values: list[float] = []
        return self._walk(output, values, label), values

    def _symbol(self, value: Any, label: str) -> float:
        key = (type(value).__name__, value)
        try:
            return float(self.symbols.setdefault(key, len(self.symbols)))
        except TypeError:
            raise MechanismError(
                f"the mechanism returned {type(value).__name__} on {label}; expected numbers, booleans, strings, "
                "None, or (nested) tuples, lists, dicts or arrays of them"
            ) from None

    def _walk(self, part: Any, values: list[float], label: str) -> str:
        if part is None:
            values.append(self._symbol(None, label))
            return "∅"
        if isinstance(part, (bool, np.bool_)):
            values.append(float(part))
            return "b"
        if isinstance(part, (int, float, np.integer, np.floating)):
            value = float(part)
            values.append(value)
            return "n" + (_NAN_SCALAR if math.isnan(value) else "")  # a NaN output has its own shape: never "missing"
        if isinstance(part, (str, bytes)):
            values.append(self._symbol(part, label))
            return "s"
        if isinstance(part, np.ndarray):
            if part.dtype.kind in "biuf":
                flat = part.astype(np.float64).ravel()
                values.extend(flat.tolist())
                return f"a{part.shape}" + nan_mark(np.isnan(flat))
            return "[" + ",".join(self._walk(x, values, label) for x in part.ravel().tolist()) + "]"
        if isinstance(part, (tuple, list)):
            return "(" + ",".join(self._walk(x, values, label) for x in part) + ")"
        if isinstance(part, dict):
            items = sorted(part.items(), key=lambda item: repr(item[0]))
            return "{" + ",".join(f"{key!r}:" + self._walk(value, values, label) for key, value in items) + "}"
        frame = frame_columns(part)
        if frame is not None:  # a data frame: its columns by name, as a dict of lists
            return "F" + self._walk(frame, values, label)
        values.append(self._symbol(part, label))
        return "o"


def value_paths(part: Any, prefix: Path = ()) -> list[Path]:
    """The path (positions and dict keys from the top) of each value :class:`Encoder` takes from
    ``part``, in its order, each path starting with ``prefix`` (the path of ``part`` itself)."""
    if isinstance(part, np.ndarray):
        if part.dtype.kind in "biuf":
            return [(*prefix, i) for i in range(part.size)]
        return [p for i, x in enumerate(part.ravel().tolist()) for p in value_paths(x, (*prefix, i))]
    if isinstance(part, (tuple, list)):
        return [p for i, x in enumerate(part) for p in value_paths(x, (*prefix, i))]
    if isinstance(part, dict):
        items = sorted(part.items(), key=lambda item: repr(item[0]))
        return [p for key, value in items for p in value_paths(value, (*prefix, repr(key)))]
    frame = frame_columns(part)
    if frame is not None:
        return value_paths(frame, prefix)
    return [prefix]


_SEQUENCES = frozenset({tuple, list})


def _kind_of(kind: type) -> str:
    return "b" if kind in PLAIN_BOOLEANS else "n"


def nan_mark(mask: npt.NDArray[np.bool_]) -> str:
    """The part of a shape signature that says which values are NaN outputs ("" when none).

    :param mask: a boolean array, True where the (flattened) output is NaN; the signature lists
        those positions as ``·NaN@[i, …]``.
    """
    return f"·NaN@{np.flatnonzero(mask).tolist()}" if mask.any() else ""


_NAN_SCALAR = nan_mark(np.array([True]))


def pad(rows: FloatArray, width: int) -> FloatArray:
    """``rows`` widened to ``width`` columns with NaN (missing values); unchanged when already as wide."""
    if rows.shape[1] >= width:
        return rows
    return np.hstack([rows, np.full((len(rows), width - rows.shape[1]), np.nan)])
