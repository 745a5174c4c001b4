"""The fast secure source (AES-256-CTR / ChaCha20 keystream keyed from os.urandom) and the fast paths of the samplers.

Known-answer tests against the published vectors; re-keying at the interval and after fork;
the scalar and vector sampling paths compared on the same random words; the vectorised alias
construction read back exactly; the one-number release against the array release.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

import dpwitness
from dpwitness import noise
from dpwitness.noise import (
    SECURE_BITS,
    CipherBits,
    GridLaplace,
    SecureBits,
    SeededBits,
    add_noise_on_grid,
    gaussian_for_delta,
    rejection,
    secure_source,
    tables,
)
from dpwitness.noise import bits as noise_bits
from dpwitness.noise.tables import _alias53_masses, _alias_from_weights

# NIST SP 800-38A, Appendix F.5.5 (CTR-AES256.Encrypt)
AES_KEY = bytes.fromhex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4")
AES_COUNTER = bytes.fromhex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")
AES_PLAIN = bytes.fromhex(
    "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
    "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710"
)
AES_CIPHER = bytes.fromhex(
    "601ec313775789a5b7a7f504bbf3d228f443e3ca4d62b59aca84e990cacaf5c5"
    "2b0930daa23de94ce87017ba2d84988ddfc9c58db67aada613c2dd08457941a6"
)
# RFC 8439, section 2.4.2 (key 00..1f, nonce 00:00:00:00:00:00:00:4a:00:00:00:00, block counter 1)
CHACHA_KEY = bytes(range(32))
CHACHA_NONCE = (1).to_bytes(4, "little") + bytes.fromhex("000000000000004a00000000")
CHACHA_PLAIN = (
    b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it."
)
CHACHA_CIPHER = bytes.fromhex(
    "6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0b"
    "f91b65c5524733ab8f593dabcd62b3571639d624e65152ab8f530c359f0861d8"
    "07ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736"
    "5af90bbf74a35be6b40b8eedf2785e42874d"
)


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=False))


def test_aes_keystream_matches_nist_sp800_38a_f55() -> None:
    source = CipherBits("aes-256-ctr")
    source._keyed(AES_KEY, AES_COUNTER)
    small = source._keystream(8).tobytes()  # the 4 blocks of the vector
    assert _xor(small, AES_PLAIN) == AES_CIPHER
    source._keyed(AES_KEY, AES_COUNTER)
    large = source.words(5000).tobytes()  # a request past the reserve: produced directly
    assert _xor(large[:64], AES_PLAIN) == AES_CIPHER
    source._keyed(AES_KEY, AES_COUNTER)
    reserved = b"".join(source.words(2).tobytes() for _ in range(4))  # cut from the reserve block
    assert _xor(reserved, AES_PLAIN) == AES_CIPHER
    assert _xor(reserved, AES_PLAIN)[:16] != AES_CIPHER[16:32]  # and a wrong vector would fail


def test_chacha20_keystream_matches_rfc8439_section_2_4_2() -> None:
    source = CipherBits("chacha20")
    source._keyed(CHACHA_KEY, CHACHA_NONCE)
    stream = source._keystream(15).tobytes()  # 120 bytes ≥ the 114-byte message
    assert _xor(stream, CHACHA_PLAIN) == CHACHA_CIPHER
    source._keyed(CHACHA_KEY, (0).to_bytes(4, "little") + CHACHA_NONCE[4:])  # counter 0: a different stream
    assert _xor(source._keystream(15).tobytes(), CHACHA_PLAIN) != CHACHA_CIPHER


def test_rekeyed_from_os_urandom_after_the_documented_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(noise_bits, "REKEY_BYTES", 2 * 8 * 5000)
    source = CipherBits()
    source._keyed(AES_KEY, AES_COUNTER)
    reference = Cipher(algorithms.AES(AES_KEY), modes.CTR(AES_COUNTER)).encryptor().update(bytes(3 * 8 * 5000))
    first, second, third = (source.words(5000).tobytes() for _ in range(3))
    assert first + second == reference[: 2 * 8 * 5000]  # one key up to the interval
    assert third != reference[2 * 8 * 5000 :]  # then a fresh key and counter


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_parent_and_child_never_share_a_stream_after_fork() -> None:
    source = CipherBits()
    source.words(3)  # a reserve block exists: the child must not hand out its rest
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next words, then exit at once
        try:
            os.write(write, source.words(4).tobytes() + SECURE_BITS.words(4).tobytes())
        finally:
            os._exit(0)
    os.close(write)
    child = b""
    while chunk := os.read(read, 1024):
        child += chunk
    os.close(read)
    os.waitpid(pid, 0)
    parent = source.words(4).tobytes() + SECURE_BITS.words(4).tobytes()
    assert len(child) == 64
    assert child[:32] != parent[:32] and child[32:] != parent[32:]


def test_a_process_id_change_without_the_fork_hooks_rekeys() -> None:
    source = CipherBits()
    source._keyed(AES_KEY, AES_COUNTER)
    source._pid = -1  # as after a fork that bypassed os.register_at_fork
    assert _xor(source.words(5000).tobytes()[:64], AES_PLAIN) != AES_CIPHER


def test_secure_source_choices_and_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(SECURE_BITS, CipherBits) and SECURE_BITS.secure and "AES-256-CTR" in SECURE_BITS.name
    assert isinstance(secure_source("os.urandom"), SecureBits)
    assert isinstance(secure_source("chacha20"), CipherBits)
    monkeypatch.setenv("DPWITNESS_SECURE_SOURCE", "os.urandom")
    assert isinstance(secure_source(), SecureBits)
    with pytest.raises(ValueError, match="secure source"):
        secure_source("md5")
    monkeypatch.delenv("DPWITNESS_SECURE_SOURCE")
    monkeypatch.setitem(sys.modules, "cryptography", None)  # cryptography absent
    assert isinstance(secure_source(), SecureBits)  # falls back to os.urandom, still secure
    with pytest.raises(ImportError):
        secure_source("aes-256-ctr")  # asked for by name: no silent fallback


def test_cipher_words_are_uniform_bits() -> None:
    source = CipherBits()
    source.words(noise_bits.URANDOM_WORDS)  # os.urandom's own words: the cipher serves what follows
    words = source.words(1 << 16)
    assert source._encryptor is not None
    bits = np.unpackbits(words.view(np.uint8))
    # 2^22 bits: a fair coin's share is 0.5 ± 0.0025 at 10 sigma; a stuck byte (1/8 of the bits) would shift it by 0.06
    assert abs(bits.mean() - 0.5) < 0.0025


@pytest.fixture(scope="module", params=["laplace", "laplace small ε", "gaussian"])
def sampler(request: pytest.FixtureRequest) -> GridLaplace | noise.GridGaussian:
    if request.param == "gaussian":
        return gaussian_for_delta(sensitivity=1.0, epsilon=1.0, delta=1e-6)
    return GridLaplace.calibrate(sensitivity=1.0, epsilon=1.0 if request.param == "laplace" else 0.002)


def test_scalar_path_draws_exactly_what_the_vector_path_draws(sampler: GridLaplace | noise.GridGaussian) -> None:
    bits = SeededBits(2026)
    words = bits.words(2 * 100_000)
    a, t = words[:100_000], words[100_000:]
    draws, accepted = sampler._attempt_words(a, t, bits)
    scalar = [sampler._attempt_one(x, y, bits) for x, y in zip(a.tolist(), t.tolist(), strict=True)]
    assert scalar == [int(d) if ok else None for d, ok in zip(draws.tolist(), accepted.tolist(), strict=True)]
    assert 0 < sum(d is None for d in scalar) < 10_000  # rejections happen, and both paths agree on them


def test_small_requests_take_the_scalar_path_with_the_same_words(sampler: GridLaplace | noise.GridGaussian) -> None:
    """The scalar path returns the draws the vector path returns from the same seeded words."""
    spare = rejection._GAUSS_SPARE if isinstance(sampler, noise.GridGaussian) else rejection._LAPLACE_SPARE
    for n in range(1, noise.SCALAR_DRAWS + 1):
        for seed in range(20):
            scalar = sampler.sample(n, SeededBits(seed))
            bits = SeededBits(seed)
            vector = rejection._fill(n, rejection.paired_attempts(sampler._attempt_words, bits), spare=spare)
            assert scalar.tolist() == vector.tolist()
    assert sampler._draw_one(SeededBits(3)) == int(sampler.sample(1, SeededBits(3))[0])


def test_one_number_release_equals_the_array_release_of_the_same_draw() -> None:
    rng = np.random.default_rng(11)
    for mechanism in (dpwitness.Laplace(sensitivity=2.5, epsilon=0.3), dpwitness.Gaussian(sensitivity=1, rho=0.2)):
        grid = mechanism.noise
        assert grid is not None
        for value in [*rng.normal(0, 1e6, 50).tolist(), 0.0, -0.0, 1e300, -3, 2**70]:
            scalar = mechanism.release(value, seed=99).value
            draw = grid.sample(1, SeededBits(99))
            vector = add_noise_on_grid(np.asarray(float(value)), draw.reshape(1), grid.granularity_log2)
            assert scalar == float(vector.reshape(-1)[0]), value
    assert dpwitness.Laplace(sensitivity=0, epsilon=1).release(3).value == 3.0
    for bad in (float("nan"), float("inf")):
        with pytest.raises(dpwitness.ParameterError, match="value"):
            dpwitness.Laplace(sensitivity=1, epsilon=1).release(bad)


def test_vectorised_alias_tables_hold_their_weights_exactly() -> None:
    rng = np.random.default_rng(3)
    one = 1 << 32
    for trial in range(200):
        columns = int(rng.integers(1, 300))
        if trial % 3 == 0:  # many weights of exactly 0, one and 2·one: the boundary cases
            weights = (rng.integers(0, 3, columns) * one).tolist()
            weights[-1] += columns * one - sum(weights)
            if weights[-1] < 0:
                continue
        else:
            cuts = np.sort(rng.integers(0, columns * one + 1, columns - 1)).tolist()
            weights = np.diff([0, *cuts, columns * one]).tolist()
        table = _alias_from_weights(weights, columns)
        assert table.pmf_numerators().tolist() == [float(w) for w in weights], trial
        assert int(table.threshold.max()) <= one
    for _ in range(30):  # 53-bit tables (the Gaussian's): Python-integer masses read back
        total = 1024 * tables._ONE53
        cuts = [0, *sorted(2 * int(c) for c in rng.integers(0, 2**62, 1023)), total]
        weights = [b - a for a, b in itertools.pairwise(cuts)]
        table = _alias_from_weights(weights, 1024, one=tables._ONE53, full=tables._ONE53 - 1)
        assert _alias53_masses(table) == weights


@pytest.mark.parametrize("m", [1 << 27, 12_345_678_901, (1 << 40) + 1])  # m ≥ 2^27 (noise.laplace)
def test_the_low_level_built_in_chunks_is_the_whole_level_bit_for_bit(m: int) -> None:
    """The low level is built 64K entries at a time (its float temporaries no longer fill the heap):
    every threshold and the spread are those of the whole-array formula."""
    size = tables._LOW_SIZE
    ideal = np.exp2(np.arange(size, dtype=np.float64) / -m) * (1 << 32)
    kept = np.floor(ideal)
    kept[0] = (1 << 32) - 1
    whole = kept.astype(np.uint32)
    spread = float(np.ptp((ideal - kept) / ideal))
    built = tables._low_table.__wrapped__(m)
    assert np.array_equal(built.thresholds, whole) and built.spread == spread


def test_the_cipher_is_keyed_only_past_the_first_mebibyte() -> None:
    """A fresh source serves its first URANDOM_WORDS words from os.urandom, then keys the cipher
    (and a release of a few samples never loads it: the next test)."""
    source = CipherBits()
    first = source.words(noise_bits.URANDOM_WORDS - 2)
    a, t = source.pair()  # the pool: 4,096 words, past what os.urandom still serves
    assert source._encryptor is not None and len(set(first.tolist()) | {a, t}) == len(first) + 2
    fresh = CipherBits()
    fresh.words(3)
    assert fresh._encryptor is None


def test_a_small_release_loads_neither_the_cipher_nor_the_ledger(tmp_path: Path) -> None:
    """Memory (issue 31): a DP mean of a file imports no cryptography, sqlite3 or asyncio."""
    table = tmp_path / "t.csv"
    table.write_text("age\n30\n40\n50\n")
    program = (
        "import sys\nfrom dpwitness.session import Session\n"
        f"Session({str(table)!r}, epsilon=1.0, dtypes={{'age': 'float'}}).mean('age', (0, 100), epsilon=1.0)\n"
        "print(sorted(m for m in ('cryptography', 'sqlite3', 'asyncio') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert out.stdout.strip() == "[]"
