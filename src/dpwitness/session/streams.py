"""Where a release's randomness comes from: the secure source, or (seeded mode, NOT for
production) streams derived from the seed, one per query and part, so no two queries share noise.
"""

from __future__ import annotations

import hashlib

import numpy as np

from dpwitness.engines import SelectionKey
from dpwitness.noise import SECURE_BITS, SeededBits
from dpwitness.query.queries import Query


def query_streams(seed: int | None, index: int, query: Query, count: int) -> list[np.random.SeedSequence | None]:
    """Seeded mode: the query's own streams, keyed by its position ``index`` in the account's
    history and by a digest of the whole query. The position alone is not enough: two sessions
    with one seed (or two concurrent spends on one ledger) see the same position, and two
    different queries must never share noise, or the difference of their releases is exact.
    Without a seed: None for each (the secure source). ``count`` is the number of streams
    (one per part of the query).
    """
    if seed is None:
        return [None] * count
    digest = hashlib.sha256(repr(query).encode()).digest()
    words = tuple(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))
    return list(np.random.SeedSequence(seed, spawn_key=(index, *words)).spawn(count))


def selection_key(stream: np.random.SeedSequence | None) -> SelectionKey:
    """Four random 64-bit words that key contribution bounding (which rows a unit keeps): from
    ``stream`` (seeded mode, reproducible), or from the secure source when it is None."""
    bits = SECURE_BITS if stream is None else SeededBits(stream)
    words = [int(w) for w in bits.words(4)]
    return (words[0], words[1], words[2], words[3])
