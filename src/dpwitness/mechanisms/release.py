"""What a release hands back: the noisy value and everything needed to judge it."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt

from dpwitness.common.encoding import json_value
from dpwitness.common.figures import tidy
from dpwitness.common.validation import check_alpha
from dpwitness.privacy.accounting import gaussian_half_width, laplace_half_width

if TYPE_CHECKING:
    from dpwitness.mechanisms.additive import Gaussian, Laplace
    from dpwitness.witness.analytic import WitnessReport
    from dpwitness.witness.audit import AuditResult

NOT_FOR_PRODUCTION = "seeded randomness: reproducible, NOT for production releases"
#: How a release's note ends when its schema was not given but found beside the file (``people.schema.toml``).
FOUND_BESIDE = "found beside the file"
#: The note of a release whose Δ is 0.
EXACT_RELEASE = "Δ = 0: no noise is needed; the exact value was released and ε spent is 0"

Value = float | npt.NDArray[np.float64] | dict[Any, float]
Interval = tuple[float, float] | tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | dict[Any, tuple[float, float]]

#: The judges of a release, registered by :mod:`dpwitness.witness` when it is imported (it always
#: is: ``dpwitness/__init__`` imports it), so that a release never imports its judge.
_JUDGES: dict[str, Callable[..., Any]] = {}


def register_judge(name: str, judge: Callable[..., Any]) -> None:
    """Register ``judge(mechanism, **options)`` as ``"witness"`` or ``"audit"`` for :class:`Release`.

    :param name: ``"witness"`` or ``"audit"``, the method of :class:`Release` that calls it; a
        second registration under the same name replaces the first.
    :param judge: called with the release's mechanism and the method's keyword options.
    """
    _JUDGES[name] = judge


def _judge(name: str) -> Callable[..., Any]:
    if name not in _JUDGES:
        raise RuntimeError(f"no {name} is registered: import dpwitness.witness first")
    return _JUDGES[name]


_DEFAULTS: dict[type, dict[str, Any]] = {}


def _defaults(cls: type) -> dict[str, Any]:
    """The default of every field of ``cls`` that has one."""
    if cls not in _DEFAULTS:
        _DEFAULTS[cls] = {f.name: f.default for f in fields(cls) if f.default is not MISSING}
    return _DEFAULTS[cls]


@dataclass(frozen=True)
class Release:
    """A differentially private release.

    ``value`` is a number, an array (vector or ``size=N`` releases) or, for keyed results
    (histograms, grouped queries), a dict from key to noisy value. ``interval`` holds the
    true value with probability 1 − ``alpha`` per coordinate (noise only: not clamping bias).
    """

    value: Value
    epsilon: float
    sensitivity: float
    scale: float
    query: str = "value"
    neighbours: str | None = None
    alpha: float = 0.05
    randomness: str = ""
    seed: int | None = None
    seeded: bool = False
    notes: tuple[str, ...] = ()
    delta: float = 0.0
    #: The noise's law, so that a reloaded release (no mechanism) keeps its interval: "laplace"
    #: (``scale`` = b) or "gaussian" (``scale`` = σ).
    distribution: str = "laplace"
    mechanism: Laplace | Gaussian | None = field(default=None, repr=False, compare=False)
    #: Which sensitivity search backs Δ (set by the session for the library's own queries);
    #: None: Δ was declared by the caller and nothing checked it (see dpwitness.sensitivity_search).
    sensitivity_search: str | None = None
    #: The names of the key columns of a keyed ``value`` (its keys are tuples of their values, or
    #: one value for one column): ``by``, a histogram's column, a quantile's ``q`` when several.
    key_columns: tuple[str, ...] = ()
    #: ρ for a release calibrated to ρ-zCDP only (its ``epsilon`` is then ∞); None otherwise.
    rho: float | None = None
    #: How a release over undeclared keys selected them (None for declared keys): the noise's law
    #: (``mechanism``), its ``scale`` (Laplace b) or ``sigma`` (Gaussian σ), the ``threshold`` τ on
    #: the noisy count, and the δ parts (``delta``, ``delta_noise``, ``delta_threshold``).
    selection: dict[str, Any] | None = None
    #: Every subclass, so that :meth:`from_dict` can rebuild the kind that ``to_dict`` names.
    _kinds: ClassVar[list[type[Release]]] = []

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        Release._kinds.append(cls)

    @property
    def half_width(self) -> float:
        if self.mechanism is not None:  # the mechanism's own law (Laplace: b·ln(1/α); Gaussian: σ·z)
            return self.mechanism.interval(self.alpha)
        if self.distribution == "gaussian":
            return gaussian_half_width(self.scale, self.alpha)
        return laplace_half_width(self.scale, self.alpha)

    @property
    def interval(self) -> Interval:
        """(low, high) at confidence 1 − alpha; a dict of pairs for keyed values."""
        w = self.half_width
        if isinstance(self.value, dict):
            return {k: (v - w, v + w) for k, v in self.value.items()}
        if isinstance(self.value, np.ndarray):
            return (self.value - w, self.value + w)
        return (self.value - w, self.value + w)

    @classmethod
    def _built(cls, **values: Any) -> Release:
        """``cls(**values)``, the fields not given at their defaults, without the frozen dataclass's
        ``object.__setattr__`` per field (≈ 2 µs, a third of a one-number release). For the mechanisms'
        own releases: nothing is checked, so every field without a default must be given.

        :param values: the fields, by name.
        """
        release = object.__new__(cls)
        release.__dict__.update(_defaults(cls), **values)
        return release

    def with_alpha(self, alpha: float) -> Release:
        """The same release, its interval at confidence 1 − alpha."""
        return replace(self, alpha=check_alpha(alpha))

    @property
    def notice(self) -> str:
        """Every note of the release, with the seeded and Δ = 0 warnings, in one line."""
        lines = list(self.notes)
        if self.seeded:
            lines.append(NOT_FOR_PRODUCTION)
        if self.sensitivity == 0:
            lines.append(EXACT_RELEASE)
        return "; ".join(lines)

    @property
    def headline_notes(self) -> tuple[str, ...]:
        """The notes that change what the number means, shown even where the others are not (the
        command line's one line per release): a schema found beside the file rather than given,
        seeded randomness (NOT for production), an exact release (Δ = 0)."""
        lines = [n for n in self.notes if n.endswith(FOUND_BESIDE)]
        if self.seeded:
            lines.append(NOT_FOR_PRODUCTION)
        if self.sensitivity == 0:
            lines.append(EXACT_RELEASE)
        return tuple(lines)

    def witness(self) -> WitnessReport:
        """The analytic witness of the mechanism that made this release."""
        if self.mechanism is None:
            raise ValueError(
                "this release carries no mechanism to witness (a composite release: witness each of its .parts; "
                "a reloaded one: rebuild Laplace(sensitivity=..., epsilon=...))"
            )
        report: WitnessReport = _judge("witness")(self.mechanism)
        return replace(report, sensitivity_search=self.sensitivity_search)

    def audit(self, **kwargs: Any) -> AuditResult:
        """The empirical certificate: the black-box auditor run on this release's mechanism.

        Audits ``mechanism.release`` on the neighbouring query values 0 and Δ (Δ in the first
        coordinate for vectors) against the claimed ε; ``kwargs`` go to :func:`dpwitness.audit`
        (``samples``, ``confidence``, ``seed``…).
        """
        if self.mechanism is None:
            raise ValueError("this release carries no mechanism to audit (a composite release: audit each of its .parts)")
        result: AuditResult = _judge("audit")(self.mechanism, **kwargs)
        return result

    def __float__(self) -> float:
        if isinstance(self.value, (dict, np.ndarray)):
            raise TypeError("this release holds several values; use .value")
        return float(self.value)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (arrays become lists, keys become strings; a keyed value also
        as ``rows``, one per key with the key columns as fields). Values are exact (every float
        round-trips); ε and δ are cut to 12 significant digits (sums of shares: 0.9, not 0.8999999999999999)."""
        data: dict[str, Any] = {
            "kind": type(self).__name__,
            "query": self.query,
            "value": json_value(self.value),
            "epsilon": tidy(self.epsilon) if math.isfinite(self.epsilon) else None,
            "rho": None if self.rho is None else tidy(self.rho),
            "delta": tidy(self.delta),
            "sensitivity": self.sensitivity,
            "scale": self.scale,
            "variance": self.scale**2 if self.distribution == "gaussian" else 2.0 * self.scale**2,
            "distribution": self.distribution,
            "alpha": self.alpha,
            "interval": json_value(self.interval),
            "neighbours": self.neighbours,
            "randomness": self.randomness,
            "seeded": self.seeded,
            "seed": self.seed,
            "notice": self.notice,
            "notes": list(self.notes),
            "sensitivity_search": self.sensitivity_search,
            "key_columns": list(self.key_columns),
        }
        if self.selection is not None:  # only a release over undeclared keys has one
            data["selection"] = dict(self.selection)
        if isinstance(self.value, dict):
            data["rows"] = self._rows()
        return data

    def _rows(self) -> list[dict[str, Any]]:
        """One plain dict per key: the key columns, ``value``, ``low``, ``high``."""
        intervals = self.interval
        assert isinstance(self.value, dict) and isinstance(intervals, dict)
        names = self._key_names()
        rows = []
        for key, value in self.value.items():
            low, high = intervals[key]
            row: dict[str, Any] = dict(zip(names, (_python(k) for k in _key_parts(key)), strict=True))
            rows.append({**row, "value": float(value), "low": float(low), "high": float(high)})
        return rows

    def _key_names(self) -> tuple[str, ...]:
        assert isinstance(self.value, dict)
        width = max((len(_key_parts(k)) for k in self.value), default=len(self.key_columns))
        if len(self.key_columns) == width:
            return self.key_columns
        return tuple(f"key_{i + 1}" for i in range(width))

    def to_polars(self) -> Any:
        """This release as a Polars frame, one row per key (one row if not keyed): the key columns,
        ``value``, ``low``/``high`` (the interval at 1 − alpha), ``epsilon``, ``delta``, ``rho``,
        ``sensitivity`` (Δ), ``neighbours`` (the relation), ``mechanism`` and ``query``."""
        from dpwitness.common.errors import require

        pl = require("polars", "polars", "Release.to_polars")
        return pl.DataFrame(self._records(), infer_schema_length=None)

    def to_pandas(self) -> Any:
        """:meth:`to_polars` as a pandas frame (needs the ``pandas`` extra)."""
        from dpwitness.common.errors import require

        require("pandas", "pandas", "Release.to_pandas")
        require("pyarrow", "pandas", "Release.to_pandas")
        return self.to_polars().to_pandas()

    def _records(self) -> list[dict[str, Any]]:
        common = {
            "epsilon": self.epsilon if math.isfinite(self.epsilon) else None,
            "delta": self.delta,
            "rho": self.rho,
            "sensitivity": self.sensitivity,
            "neighbours": self.neighbours,
            "mechanism": self.distribution,
            "query": self.query,
        }
        if isinstance(self.value, dict):
            return [{**row, **common} for row in self._rows()]
        if isinstance(self.value, np.ndarray):
            lows, highs = (np.asarray(x, dtype=np.float64) for x in self.interval)
            return [
                {"index": i, "value": float(v), "low": float(lo), "high": float(hi), **common}
                for i, (v, lo, hi) in enumerate(zip(self.value, lows, highs, strict=True))
            ]
        low, high = (float(x) for x in self.interval)
        return [{"value": float(self.value), "low": low, "high": high, **common}]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Release:
        """The release that :meth:`to_dict` described (for archives; see ``Session.to_dict``).

        Keyed values come back with string keys, vectors as arrays. The mechanism is not
        archived: to witness a reloaded release, rebuild ``Laplace(sensitivity=…, epsilon=…)``.

        :param data: a mapping as :meth:`to_dict` returns it (or as JSON read back); its
            ``kind`` picks the release class (this class when absent).
        """
        candidates: list[type[Release]] = [Release, *Release._kinds]
        kinds = {kind.__name__: kind for kind in candidates}
        target: type[Release] = kinds.get(str(data.get("kind", cls.__name__)), cls)
        names = {f.name for f in fields(target) if f.init and f.name != "mechanism"}
        options: dict[str, Any] = {name: data[name] for name in names if name in data}
        options["value"] = _revived(data["value"])
        columns = tuple(data.get("key_columns") or ())
        if isinstance(data.get("rows"), list) and columns:  # typed keys from the rows' key columns
            rows = data["rows"]
            options["value"] = {_key_of([row[c] for c in columns]): float(row["value"]) for row in rows}
        if data.get("epsilon", 0.0) is None:
            options["epsilon"] = math.inf
        options["scale"] = math.nan if data.get("scale") is None else float(data["scale"])
        options["notes"] = tuple(data.get("notes", ()))
        for name, value in options.items():
            if name == "parts":
                options[name] = tuple(Release.from_dict(part) for part in value)
            elif isinstance(value, dict) and "kind" in value:  # a release inside (a quantile's histogram)
                options[name] = Release.from_dict(value)
            elif isinstance(value, list):
                options[name] = tuple(value)
        return target(**options)

    def __str__(self) -> str:
        from dpwitness.mechanisms.report import release_text

        return release_text(self)

    def __repr__(self) -> str:
        from dpwitness.mechanisms.report import release_repr

        return release_repr(self)

    def _repr_html_(self) -> str:
        from dpwitness.mechanisms.report import release_html

        return release_html(self)


def _key_parts(key: Any) -> tuple[Any, ...]:
    """A key's values in column order (a quantile's (key, q) flattened)."""
    if isinstance(key, tuple):
        return tuple(part for item in key for part in _key_parts(item))
    return (key,)


def _key_of(values: list[Any]) -> Any:
    converted = [tuple(v) if isinstance(v, list) else v for v in values]
    return converted[0] if len(converted) == 1 else tuple(converted)


def releases_frame(releases: Any) -> Any:
    """Several releases as one Polars frame (:meth:`Release.to_polars`'s columns; key columns
    that a release does not have are null in its rows)."""
    from dpwitness.common.errors import require

    pl = require("polars", "polars", "Session.results")
    records = [record for release in releases for record in release._records()]
    return pl.DataFrame(records, infer_schema_length=None) if records else pl.DataFrame()


def _revived(value: Any) -> Any:
    if isinstance(value, list):
        return np.asarray(value, dtype=np.float64)
    if isinstance(value, dict):
        return {key: float(v) for key, v in value.items()}
    return float(value)


def _python(key_part: Any) -> Any:
    """A key's part as a Python value (a numpy scalar unwrapped; a date or a text kept as it is)."""
    return key_part.item() if isinstance(key_part, np.generic) else key_part
