"""Random bits: the secure sources (AES-256-CTR or ChaCha20 keyed from os.urandom, os.urandom itself),
the seeded one for reproducible runs, and the exact Geometric(1/2) drawn from them."""

from __future__ import annotations

import importlib.util
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt


class BitSource(Protocol):
    """Anything that returns uniformly random 64-bit words: ``words(n)`` gives ``n`` (≥ 0) of
    them as a uint64 array; ``name`` says what it is, ``secure`` whether it is cryptographically secure."""

    name: str
    secure: bool

    def words(self, n: int) -> npt.NDArray[np.uint64]: ...


class SecureBits:
    """The operating system's CSPRNG (``os.urandom`` → getrandom(2)): one system call per request.

    Secure, and the fallback default when ``cryptography`` is not installed; select it with
    ``DPWITNESS_SECURE_SOURCE=os.urandom``. About 24–38 M samples/s on the 2-core benchmark machine.
    ``words(n)`` reads 8·``n`` bytes of os.urandom as ``n`` uint64 words.
    """

    name = "os.urandom (cryptographically secure)"
    secure = True

    def words(self, n: int) -> npt.NDArray[np.uint64]:
        return np.frombuffer(os.urandom(8 * n), dtype=np.uint64)

    def pair(self) -> tuple[int, int]:
        """One rejection attempt's two words (a, t) as Python integers: 16 bytes of os.urandom, no state kept."""
        both = os.urandom(16)
        return int.from_bytes(both[:8], "little"), int.from_bytes(both[8:], "little")


#: Cipher keystream generators offered by :class:`CipherBits` (OpenSSL through ``cryptography``).
CIPHERS = ("aes-256-ctr", "chacha20")
#: Bytes of keystream after which :class:`CipherBits` draws a fresh key and counter from os.urandom.
REKEY_BYTES = 1 << 32
_RESERVE_WORDS = 1 << 12  # small requests are served from a 32 KiB block of keystream
#: Words of keystream converted to Python integers at once for :meth:`CipherBits.pair` (the scalar samplers).
_POOL_WORDS = 1 << 12
_ZEROS = bytes(1 << 20)
#: Words a fresh (or forked) :class:`CipherBits` reads from os.urandom itself before it keys the
#: cipher (1 MiB): a release that draws a few samples never loads OpenSSL's ciphers (6 MB of
#: memory, docs/benchmarks.md), and every word is as secure either way.
URANDOM_WORDS = 1 << 17


class CipherBits:
    """A cryptographically secure generator: the keystream of AES-256-CTR (or ChaCha20), keyed from os.urandom.

    Its first :data:`URANDOM_WORDS` words (1 MiB) are os.urandom's own, read as they are asked
    for; the cipher is keyed, and ``cryptography`` imported, only when a request would go past
    them. The key (32 bytes) and the initial counter block / nonce (16 bytes) come from ``os.urandom``;
    the output is the cipher applied to zeros, i.e. its keystream, through OpenSSL (the
    ``cryptography`` package). It is re-keyed from ``os.urandom`` every :data:`REKEY_BYTES`
    (2^32 bytes = 2^28 AES blocks, far below the 2^64-block birthday bound of a 128-bit block
    cipher: distinguishing advantage ≤ 2^-73 per key) and in a child process after ``fork``
    (``os.register_at_fork``, and a process-id check for forks that skip the hooks), so parent and
    child never share a stream. Thread-safe (one lock around the cipher state). Requests of up
    to 4,096 words are cut from a 32 KiB block of keystream; larger ones are produced directly.
    The scalar samplers take their words two at a time through :meth:`pair`, from a pool of
    keystream already converted to Python integers (see there).
    Known-answer tests (NIST SP 800-38A F.5.5, RFC 8439 §2.4.2) check the keystream.
    ``cipher`` is one of :data:`CIPHERS` (default "aes-256-ctr"); ``words(n)`` returns the next
    ``n`` uint64 words of the keystream.
    """

    secure = True

    def __init__(self, cipher: str = "aes-256-ctr") -> None:
        if cipher not in CIPHERS:
            raise ValueError(f"cipher must be one of {CIPHERS}, got {cipher!r}")
        self.cipher = cipher
        label = "AES-256-CTR" if cipher == "aes-256-ctr" else "ChaCha20"
        self.name = f"{label} keystream keyed from os.urandom (cryptographically secure, OpenSSL; first 1 MiB os.urandom itself)"
        self._lock = threading.Lock()
        self._rekey()
        alive = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: None if (source := alive()) is None else source._rekey())

    def _keyed(self, key: bytes, counter: bytes) -> None:
        """Start the keystream at (key, counter); the known-answer tests call this directly."""
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        if self.cipher == "aes-256-ctr":
            engine = Cipher(algorithms.AES(key), modes.CTR(counter))
        else:  # cryptography's 16-byte ChaCha20 nonce: 4-byte little-endian block counter, then RFC 8439's 12-byte nonce
            engine = Cipher(algorithms.ChaCha20(key, counter), mode=None)  # type: ignore[arg-type]
        self._encryptor: Any = engine.encryptor()
        self._fresh_state()

    def _fresh_state(self) -> None:
        self._produced = 0
        self._reserve = np.empty(0, dtype=np.uint64)
        self._pool: list[int] = []
        self._pid = os.getpid()

    def _rekey(self) -> None:
        """Start over, unkeyed: the next :data:`URANDOM_WORDS` words from os.urandom, then a fresh key."""
        self._lock = threading.Lock()  # a lock held by another thread at fork time is never released in the child
        self._encryptor = None
        self._urandom_left = URANDOM_WORDS
        self._fresh_state()

    def _keystream(self, n: int) -> npt.NDArray[np.uint64]:
        """The next 8·n bytes of keystream as n words (the caller holds the lock)."""
        if self._encryptor is None:
            if n <= self._urandom_left:
                self._urandom_left -= n
                return np.frombuffer(bytearray(os.urandom(8 * n)), dtype=np.uint64)
            self._keyed(os.urandom(32), os.urandom(16))
        size = 8 * n
        if size > REKEY_BYTES - self._produced:
            self._keyed(os.urandom(32), os.urandom(16))
        self._produced += size
        out = np.empty(n + 2, dtype=np.uint64)  # OpenSSL may write up to a block past the data
        view = memoryview(out).cast("B")  # type: ignore[arg-type]
        for done in range(0, size, len(_ZEROS)):
            chunk = min(len(_ZEROS), size - done)
            self._encryptor.update_into(_ZEROS[:chunk], view[done : done + chunk + 16])
        return out[:n]

    def words(self, n: int) -> npt.NDArray[np.uint64]:
        if os.getpid() != self._pid:
            self._rekey()
        with self._lock:
            if n > _RESERVE_WORDS:
                return self._keystream(n)
            if len(self._reserve) < n:
                self._reserve = self._keystream(_RESERVE_WORDS)
            out, self._reserve = self._reserve[:n], self._reserve[n:]
            return out

    def pair(self) -> tuple[int, int]:
        """The next two words of keystream as Python integers: one rejection attempt's (a, t).

        For the scalar samplers. The words come from a pool of :data:`_POOL_WORDS` words of
        keystream converted to Python integers at once (refilled under the lock, and emptied with
        the key after a fork); ``list.pop`` is atomic, so no word is handed out twice, whichever
        threads ask, and a word left alone when the pool runs dry is discarded, never reused. The
        process-id check runs on every call, as in :meth:`words` (a child forked without the
        hooks re-keys before it takes a word, so it never hands out the parent's pool).
        """
        if os.getpid() != self._pid:
            self._rekey()
        pool = self._pool
        try:
            return pool.pop(), pool.pop()
        except IndexError:
            with self._lock:
                fresh: list[int] = self._keystream(_POOL_WORDS).tolist()
            a, t = fresh.pop(), fresh.pop()  # before the pool is shared: these two are this caller's
            self._pool = fresh
            return a, t


def secure_source(name: str | None = None) -> BitSource:
    """The secure generator called ``name``: "aes-256-ctr" (the default), "chacha20" or "os.urandom".

    Without a name, ``$DPWITNESS_SECURE_SOURCE`` or else "aes-256-ctr". When ``cryptography`` is
    not installed (it comes with the ``crypto`` extra), the default falls back to os.urandom:
    secure as well, but bound by one system call per request.
    """
    chosen = name or os.environ.get("DPWITNESS_SECURE_SOURCE") or "aes-256-ctr"
    if chosen == "os.urandom":
        return SecureBits()
    if chosen not in CIPHERS:
        raise ValueError(f"secure source must be 'os.urandom' or one of {CIPHERS}, got {chosen!r}")
    if importlib.util.find_spec("cryptography") is None:  # looked up, not imported: see URANDOM_WORDS
        if name is not None:
            raise ImportError(f"secure source {chosen!r} needs the cryptography package (the crypto extra)")
        return SecureBits()
    return CipherBits(chosen)


class SeededBits:
    """Deterministic PCG64 stream for reproducible runs. NOT for production releases.

    ``seed`` is an integer or a SeedSequence (a fresh PCG64 is seeded with it) or a numpy
    Generator (its bit generator is used, and advanced); ``words(n)`` returns its next ``n``
    raw 64-bit words.
    """

    secure = False

    def __init__(self, seed: int | np.random.SeedSequence | np.random.Generator) -> None:
        if isinstance(seed, np.random.Generator):
            self._bit_generator = seed.bit_generator
            self.name = "numpy Generator supplied by caller (seeded, not for production)"
        else:
            sequence = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
            self._bit_generator = np.random.PCG64(sequence)
            self.name = f"PCG64 seeded with {seed!r} (reproducible, NOT for production)"

    def words(self, n: int) -> npt.NDArray[np.uint64]:
        raw: npt.NDArray[np.uint64] = self._bit_generator.random_raw(n)
        return raw


#: The default secure source (see :func:`secure_source`): AES-256-CTR keyed from os.urandom.
SECURE_BITS = secure_source()
#: os.urandom itself, one system call per request (the fallback and an option).
OS_BITS = SecureBits()


def bit_source(seed: int | np.random.Generator | None) -> BitSource:
    """The secure source when ``seed`` is None, otherwise a seeded, reproducible one."""
    if seed is None:
        return SECURE_BITS
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer, np.random.Generator)):
        raise TypeError(f"seed must be an integer, a numpy Generator or None, got {seed!r}")
    if isinstance(seed, (int, np.integer)) and seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    return SeededBits(seed if isinstance(seed, np.random.Generator) else int(seed))


def _secure_pairs(bits: BitSource) -> Callable[[], tuple[int, int]] | None:
    """The secure sources' :meth:`CipherBits.pair` (two fresh words per attempt), else None.

    Seeded sources keep :func:`_scalar_fill`, whose words are the vector path's, so that a seeded
    run is reproducible whichever path runs; a secure run is not reproducible anyway, and each
    attempt of either path uses two fresh, uniform words once, so the draws have the same law.
    """
    return bits.pair if isinstance(bits, (CipherBits, SecureBits)) else None


def _trailing_zeros(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    lowest = x & (~x + np.uint64(1))
    return np.bitwise_count(lowest - np.uint64(1)).astype(np.int64)


def _geometric_half(n: int, bits: BitSource) -> npt.NDArray[np.int64]:
    """Exact Geometric(1/2) on {0, 1, …}: trailing zeros of an unbounded bit string."""
    out = np.zeros(n, dtype=np.int64)
    pending = np.arange(n)
    while len(pending):
        w = bits.words(len(pending))
        done = w != 0
        out[pending[done]] += _trailing_zeros(w[done])
        out[pending[~done]] += 64
        pending = pending[~done]
    return out
