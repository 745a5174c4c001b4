"""A small DP library written the way people write one (the hook machinery's test subject).

It knows nothing of dpwitness: numpy noise, a float sum added up row by row, a per-key count.
"""

from __future__ import annotations

import numpy as np


class LaplaceNoise:
    """Laplace noise of scale sensitivity/epsilon (float noise, as such libraries often do)."""

    def __init__(self, epsilon: float, sensitivity: float, rng: np.random.Generator | None = None) -> None:
        if epsilon <= 0 or sensitivity < 0:
            raise ValueError("epsilon must be > 0 and sensitivity ≥ 0")
        self.epsilon = epsilon
        self.sensitivity = sensitivity
        self.rng = rng or np.random.default_rng()

    def randomise(self, value: float) -> float:
        return float(value + self.rng.laplace(0.0, self.sensitivity / self.epsilon))


class ClampedLaplace(LaplaceNoise):
    """Laplace noise, then clamped to [lower, upper] (calls its parent's randomise)."""

    def __init__(self, epsilon: float, sensitivity: float, lower: float, upper: float) -> None:
        super().__init__(epsilon, sensitivity)
        self.lower, self.upper = lower, upper

    def randomise(self, value: float) -> float:
        return min(max(super().randomise(value), self.lower), self.upper)


def private_sum(values: list[float], *, lower: float, upper: float, epsilon: float) -> float:
    """Sum of the values clamped to [lower, upper], plus Laplace noise for Δ = max(|lower|, |upper|)."""
    total = 0.0
    for value in values:
        if value == value:  # skip NaN
            total += min(max(value, lower), upper)
    return LaplaceNoise(epsilon, max(abs(lower), abs(upper))).randomise(total)


def exact_private_sum(values: list[float], *, lower: float, upper: float, epsilon: float) -> float:
    """The same sum, computed exactly before the one rounding (math.fsum): its Δ holds."""
    import math

    clamped = [min(max(v, lower), upper) for v in values if v == v]
    return LaplaceNoise(epsilon, max(abs(lower), abs(upper))).randomise(math.fsum(clamped))


def count_by_key(keys: list[str], *, epsilon: float) -> dict[str, float]:
    """A noisy count for every key present (one noise call per key seen: the key set leaks)."""
    counts: dict[str, int] = {}
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
    return {key: LaplaceNoise(epsilon, 1.0).randomise(count) for key, count in sorted(counts.items())}


def clamped_mean(values: list[float], *, lower: float, upper: float, epsilon: float) -> float:
    """A mean with its noise clamped to the bounds (nested randomise calls)."""
    n = max(len(values), 1)
    total = sum(min(max(v, lower), upper) for v in values)
    return ClampedLaplace(epsilon, (upper - lower), lower, upper).randomise(total / n)


class VectorLaplace:
    """Laplace noise on a vector of numbers, one draw per coordinate, for an L1 sensitivity."""

    def __init__(self, epsilon: float, sensitivity: float) -> None:
        self.epsilon, self.sensitivity = epsilon, sensitivity
        self.rng = np.random.default_rng()

    def randomise(self, values: np.ndarray) -> np.ndarray:
        return np.asarray(values, dtype=float) + self.rng.laplace(0.0, self.sensitivity / self.epsilon, len(values))


def sum_by_key(
    keys: list[object],
    values: list[float],
    *,
    lower: float,
    upper: float,
    epsilon: float,
    public_keys: list[object] | None = None,
) -> dict[object, float]:
    """A noisy sum per key, one vector of noise for them all (each record clamped, each sum exact
    before its one rounding, Δ = max(|lower|, |upper|)).

    With ``public_keys`` the released keys are those (records of other keys are dropped); without,
    they are the keys found in the data, in order of appearance (no partition selection).
    """
    import math

    released = list(dict.fromkeys(keys)) if public_keys is None else list(public_keys)
    groups: dict[object, list[float]] = {key: [] for key in released}
    for key, value in zip(keys, values, strict=True):
        if key in groups and value == value:  # NaN skipped
            groups[key].append(min(max(value, lower), upper))
    totals = np.array([math.fsum(groups[key]) for key in released])
    noisy = VectorLaplace(epsilon, max(abs(lower), abs(upper))).randomise(totals)
    return dict(zip(released, noisy.tolist(), strict=True))


def group_totals(
    keys: list[object], values: list[float], *, public_keys: list[object], lower: float, upper: float, epsilon: float
) -> dict[object, float]:
    """A noisy total per public key: each group's total starts at its first record, then adds the others clamped.

    (The first record of a group is never clamped: a record that opens a new group moves its total
    by its whole value, beyond the declared Δ.)
    """
    totals: dict[object, float] = {}
    for key, value in zip(keys, values, strict=True):
        if key not in public_keys or value != value:  # other keys and NaN skipped
            continue
        if key in totals:
            totals[key] += min(max(value, lower), upper)
        else:
            totals[key] = value
    vector = np.array([totals.get(key, 0.0) for key in public_keys])
    noisy = VectorLaplace(epsilon, max(abs(lower), abs(upper))).randomise(vector)
    return dict(zip(public_keys, noisy.tolist(), strict=True))


# --- values of every type: items, bit vectors, tuples from maps with several outputs, dicts ---------


class RandomizedResponse:
    """k-ary randomized response over listed items (bytes, booleans…), as OpenDP's
    ``make_randomized_response``: its input metric is the discrete distance, and its privacy map
    takes that distance as a u32 (a float is refused)."""

    def __init__(self, items: list[object], epsilon: float) -> None:
        if len(items) < 2 or len(set(items)) != len(items):
            raise ValueError("randomized response needs two or more distinct items")
        self.items, self.epsilon = list(items), epsilon
        self.rng = np.random.default_rng()

    def map(self, d_in: int) -> float:
        if not isinstance(d_in, int) or isinstance(d_in, bool) or not 0 <= d_in < 2**32:
            raise TypeError("d_in must be a u32")
        return d_in * self.epsilon

    def randomise(self, value: object) -> object:
        if value not in self.items:
            raise ValueError("the value is not one of the listed items")
        keep = np.exp(self.epsilon) / (np.exp(self.epsilon) + len(self.items) - 1)
        if self.rng.random() < keep:
            return value
        others = [item for item in self.items if item != value]
        return others[int(self.rng.integers(len(others)))]


class RandomizedBits:
    """Randomized response on one respondent's ticked options (bytes, little-endian bits), as OpenDP's
    ``make_randomized_response_bitvec``: its input metric is the discrete distance (a u32), and a
    changed respondent changes at most two bits, each flipped with probability 1 / (1 + e^(ε/2)).
    ``keep_last`` leaves the last bit as it is (OpenDP's #2708, fixed in 0.15)."""

    def __init__(self, epsilon: float, *, keep_last: bool = False) -> None:
        self.epsilon, self.keep_last = epsilon, keep_last
        self.rng = np.random.default_rng()

    map = RandomizedResponse.map  # the same u32 privacy map

    def randomise(self, bits: bytes) -> bytes:
        unpacked = np.unpackbits(np.frombuffer(bits, dtype=np.uint8), bitorder="little")
        flip = self.rng.random(len(unpacked)) < 1 / (1 + np.exp(self.epsilon / 2))
        if self.keep_last:
            flip[-1] = False
        return np.packbits(unpacked ^ flip.astype(np.uint8), bitorder="little").tobytes()


class BitFlip:
    """Randomized response on a bit vector given as bytes: each bit flips with probability
    1 / (1 + e^(ε/Δ)), for Δ the bits one record can change (an L1 sensitivity)."""

    def __init__(self, epsilon: float, sensitivity: float) -> None:
        self.epsilon, self.sensitivity = epsilon, sensitivity
        self.rng = np.random.default_rng()

    def randomise(self, bits: bytes) -> bytes:
        unpacked = np.unpackbits(np.frombuffer(bits, dtype=np.uint8))
        flip = self.rng.random(len(unpacked)) < 1 / (1 + np.exp(self.epsilon / self.sensitivity))
        return bytes(np.packbits(unpacked ^ flip.astype(np.uint8)).tolist())


class MappedCounts:
    """Laplace noise on a tuple of counts; the Δ is read off the stability map, which returns
    (l0, l1, l∞) of one record as OpenDP's maps on grouped outputs do."""

    def __init__(self, epsilon: float, stability: tuple[int, int, int] = (1, 1, 1)) -> None:
        self.epsilon, self._stability = epsilon, stability
        self.rng = np.random.default_rng()

    def map(self, d_in: int) -> tuple[int, int, int]:
        return tuple(d_in * s for s in self._stability)  # type: ignore[return-value]

    def randomise(self, counts: tuple[float, ...]) -> tuple[float, ...]:
        scale = self.map(1)[1] / self.epsilon
        return tuple(float(c + self.rng.laplace(0.0, scale)) for c in counts)


class DictLaplace:
    """Laplace noise on each value of a dict of counts, for an L1 sensitivity."""

    def __init__(self, epsilon: float, sensitivity: float) -> None:
        self.epsilon, self.sensitivity = epsilon, sensitivity
        self.rng = np.random.default_rng()

    def randomise(self, counts: dict[object, float]) -> dict[object, float]:
        return {key: float(c + self.rng.laplace(0.0, self.sensitivity / self.epsilon)) for key, c in counts.items()}


class FrameLaplace:
    """Laplace noise on every column of numbers of a table (a release per key returned as a frame,
    as OpenDP's Polars context or SmartNoise SQL return theirs), for an L1 sensitivity: the key
    columns are left as they are."""

    def __init__(self, epsilon: float, sensitivity: float) -> None:
        self.epsilon, self.sensitivity = epsilon, sensitivity
        self.rng = np.random.default_rng()

    def randomise(self, frame: object) -> object:
        import polars as pl

        scale = self.sensitivity / self.epsilon
        return frame.with_columns(  # type: ignore[attr-defined]
            pl.col(name).cast(pl.Float64) + pl.Series(self.rng.laplace(0.0, scale, frame.height))  # type: ignore[attr-defined]
            for name, dtype in frame.schema.items()  # type: ignore[attr-defined]
            if dtype.is_numeric()
        )


def counts_frame(keys: list[object], *, epsilon: float, public_keys: list[object] | None = None) -> object:
    """A noisy count per key as a frame (columns ``k``, ``count``): with ``public_keys`` one row per
    public key; without, one row per key found in the data (no partition selection: the number of
    rows and the keys released follow the data)."""
    import polars as pl

    released = sorted(set(keys), key=repr) if public_keys is None else list(public_keys)
    counts = [float(sum(k == key for k in keys)) for key in released]
    return FrameLaplace(epsilon, 1.0).randomise(pl.DataFrame({"k": released, "count": counts}))


def counts_and_rows_frame(keys: list[object], public_keys: list[object], *, epsilon: float) -> object:
    """A noisy count per public key and the table's number of rows beside it in a second column,
    all noised for Δ = 1: one record moves its key's count and the rows of every key (the bug)."""
    import polars as pl

    counts = [float(sum(k == key for k in keys)) for key in public_keys]
    frame = pl.DataFrame({"k": public_keys, "count": counts, "rows": [float(len(keys))] * len(public_keys)})
    return FrameLaplace(epsilon, 1.0).randomise(frame)


class GaussianNoise:
    """The Gaussian mechanism for an (ε, δ) claim and an L2 sensitivity, with the classical σ =
    Δ·√(2 ln(1.25/δ))/ε (Dwork & Roth, Thm A.1; ε ≤ 1); its release is snapped to a grid of 2⁻²⁰
    (no porous float support)."""

    def __init__(self, epsilon: float, delta: float, sensitivity: float) -> None:
        if not 0 < epsilon <= 1 or not 0 < delta < 1 or sensitivity < 0:
            raise ValueError("the classical Gaussian needs 0 < ε ≤ 1, 0 < δ < 1 and Δ ≥ 0")
        self.epsilon, self.delta, self.sensitivity = epsilon, delta, sensitivity
        self.rng = np.random.default_rng()

    def sigma(self) -> float:
        return float(self.sensitivity * np.sqrt(2 * np.log(1.25 / self.delta)) / self.epsilon)

    def randomise(self, value: float) -> float:
        noisy = value + self.rng.normal(0.0, self.sigma())
        return float(np.round(noisy * 2.0**20) / 2.0**20)


class GaussianNoiseRhoAsEpsilon(GaussianNoise):
    """The same mechanism with σ = Δ/√(2ε): the zCDP formula σ = Δ/√(2ρ) with the claimed ε used as
    ρ, never converted from (ε, δ) (the bug: σ ≈ 0.71 where 4.84 is needed at ε = 1, δ = 10⁻⁵)."""

    def sigma(self) -> float:
        return float(self.sensitivity / np.sqrt(2 * self.epsilon))


def gaussian_count(keys: list[object], *, epsilon: float, delta: float, wrong_sigma: bool = False) -> float:
    """The number of records through the Gaussian mechanism at (ε, δ) (Δ₂ = 1)."""
    mechanism = GaussianNoiseRhoAsEpsilon if wrong_sigma else GaussianNoise
    return mechanism(epsilon, delta, 1.0).randomise(float(len(keys)))


def respond(value: object, items: list[object], *, epsilon: float) -> object:
    """The value through randomized response over the listed items."""
    return RandomizedResponse(items, epsilon).randomise(value)


def respond_leaky(value: object, items: list[object], *, epsilon: float) -> object:
    """Randomized response that keeps the true answer with e^(2ε) odds (the bug: it spends 2ε)."""
    return RandomizedResponse(items, 2 * epsilon).randomise(value)


def respond_bits(bits: bytes, *, epsilon: float, keep_last: bool = False) -> bytes:
    """The ticked options through bit-vector randomized response (``keep_last``: the bug of OpenDP's #2708)."""
    return RandomizedBits(epsilon, keep_last=keep_last).randomise(bits)


def flip_bits(bits: bytes, *, epsilon: float, sensitivity: float = 1.0) -> bytes:
    return BitFlip(epsilon, sensitivity).randomise(bits)


def counts_of(keys: list[object], items: list[object], *, epsilon: float) -> tuple[float, ...]:
    """A noisy count per listed item, as a tuple (one record moves one count: (1, 1, 1))."""
    return MappedCounts(epsilon).randomise(tuple(float(sum(k == item for k in keys)) for item in items))


def cumulative_counts(keys: list[object], items: list[object], *, epsilon: float) -> tuple[float, ...]:
    """Noisy counts of the items up to each listed item, declared as plain counts (1, 1, 1): a
    record moves every count from its item on (the bug)."""
    counts = [sum(k == item for k in keys) for item in items]
    return MappedCounts(epsilon).randomise(tuple(float(sum(counts[: i + 1])) for i in range(len(items))))


def count_dict(keys: list[object], items: list[object], *, epsilon: float) -> dict[object, float]:
    """A noisy count per listed item, as a dict."""
    return DictLaplace(epsilon, 1.0).randomise({item: float(sum(k == item for k in keys)) for item in items})


def count_dict_twice(keys: list[object], items: list[object], *, epsilon: float) -> dict[object, float]:
    """A noisy count per listed item, as a dict, counting each record twice while declaring Δ = 1 (the bug)."""
    return DictLaplace(epsilon, 1.0).randomise({item: 2.0 * sum(k == item for k in keys) for item in items})


# --- inputs the check must reach: a declared size, a minimum size, a structure that changes with n ---


class VectorDomain:
    """Vectors of floats, of exactly ``size`` elements when a size is declared (as OpenDP's
    ``vector_domain(atom_domain(bounds=(lower, upper)), size=n)``): a sized domain refuses every
    other length. Values are clamped to [lower, upper] by the transformations on it."""

    def __init__(self, lower: float, upper: float, size: int | None = None) -> None:
        if not lower <= upper or (size is not None and size < 1):
            raise ValueError("the bounds must be ordered and the size ≥ 1")
        self.lower, self.upper, self.size = lower, upper, size

    def check(self, values: list[float]) -> None:
        if self.size is not None and len(values) != self.size:
            raise ValueError(f"the input is not a member of the domain: expected {self.size} elements, got {len(values)}")


class SizedSum:
    """A noisy sum over a sized domain. The size is public, so a neighbour replaces one record:
    the sum moves by at most upper − lower (the Δ this class declares)."""

    def __init__(self, domain: VectorDomain, epsilon: float) -> None:
        self.domain, self.epsilon = domain, epsilon

    def sensitivity(self) -> float:
        return self.domain.upper - self.domain.lower

    def __call__(self, values: list[float]) -> float:
        import math

        self.domain.check(values)
        clamped = [min(max(v, self.domain.lower), self.domain.upper) for v in values if v == v]
        return LaplaceNoise(self.epsilon, self.sensitivity()).randomise(math.fsum(clamped))


class SizedSumAddRemoveDelta(SizedSum):
    """The same sum declaring max(|lower|, |upper|), the Δ of adding or removing a record: on a
    sized domain a neighbour replaces one, which moves the sum by upper − lower (the bug, seen
    when the bounds straddle 0)."""

    def sensitivity(self) -> float:
        return max(abs(self.domain.lower), abs(self.domain.upper))


def histogram_model(values: list[float], *, n_bins: int, lower: float, upper: float, epsilon: float) -> list[float]:
    """Noisy counts of ``n_bins`` equal-width bins over [lower, upper] (values clamped), a model
    that needs n ≥ n_bins samples to fit, as k-means needs n ≥ n_clusters (Δ = 1, one record
    moves one count)."""
    if len(values) < n_bins:
        raise ValueError(f"n_samples={len(values)} should be >= n_bins={n_bins}")
    width = (upper - lower) / n_bins
    counts = [0.0] * n_bins
    for value in values:
        if value == value:
            counts[min(int((min(max(value, lower), upper) - lower) / width), n_bins - 1)] += 1.0
    return VectorLaplace(epsilon, 1.0).randomise(np.array(counts)).tolist()  # type: ignore[no-any-return]


#: From this many rows on, the two-pass mean (a noisy sum and a noisy count, ε/2 each) has the
#: lower error at bounds of width 1 and ε = 1; below it, one noisy sum divided by the size.
TWO_PASS_ROWS = 1_581


def private_mean(values: list[float], *, lower: float, upper: float, epsilon: float, rows: int | None = None) -> float:
    """A noisy mean of the values clamped to [lower, upper], its estimator chosen by the number of
    rows: ``rows``, the public size the caller states. None: the data's own length, so the number
    of noise calls shows whether the data has 1,581 rows or more (the bug)."""
    import math

    n = len(values) if rows is None else rows
    clamped = [min(max(v, lower), upper) for v in values if v == v]
    bound = max(abs(lower), abs(upper))
    if n < TWO_PASS_ROWS:
        return LaplaceNoise(epsilon, bound).randomise(math.fsum(clamped)) / max(n, 1)
    total = LaplaceNoise(epsilon / 2, bound).randomise(math.fsum(clamped))
    count = LaplaceNoise(epsilon / 2, 1.0).randomise(float(len(clamped)))
    return total / max(count, 1.0)
