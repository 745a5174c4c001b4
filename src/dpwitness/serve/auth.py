"""Analyst tokens: stored only as salted SHA-256 digests, compared in constant time.

Tokens are random 256-bit secrets made by :func:`new_token`, so a fast salted hash is
enough (there is nothing to brute-force); a per-token salt stops equal tokens from having
equal digests.  ``hmac.compare_digest`` keeps the comparison's timing independent of how
many bytes match.

:class:`TokenStore` checks an unknown token against every stored hash (one salted SHA-256 per
analyst). The configuration holds no token, only their salted hashes, so no index can be built
at start-up; instead a token's first successful check (that full scan) files it under its
HMAC with a key drawn when the store is made, and later requests find it with one HMAC, a dict
lookup and one check against its stored hash. The key is secret and fresh per process, so
neither the lookup's timing nor anything else an outsider can see depends on the tokens'
bytes; a token that is not filed (wrong, or not used yet) still costs the full scan, whichever
analysts exist. Only matched tokens are filed: at most one entry per analyst.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

SCHEME = "sha256"


def new_token() -> str:
    """A fresh random token (43 URL-safe characters, 256 bits)."""
    return secrets.token_urlsafe(32)


def hash_token(token: str, *, salt: bytes | None = None) -> str:
    """``sha256$<salt hex>$<digest hex>``, the form stored in the config file."""
    salt = secrets.token_bytes(16) if salt is None else salt
    digest = hashlib.sha256(salt + token.encode("utf-8")).hexdigest()
    return f"{SCHEME}${salt.hex()}${digest}"


def parse_token_hash(stored: str) -> tuple[bytes, bytes]:
    """(salt, digest) from a stored hash; ValueError if it is not in the expected form."""
    parts = stored.split("$")
    if len(parts) != 3 or parts[0] != SCHEME:
        raise ValueError(f"a token hash of the form {SCHEME}$<salt hex>$<digest hex> (made by `dpwitness serve-token`)")
    salt, digest = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
    if len(salt) < 8 or len(digest) != 32:
        raise ValueError("a salt of at least 8 bytes and a 32-byte SHA-256 digest")
    return salt, digest


@dataclass(frozen=True)
class StoredToken:
    """One analyst's token hash, parsed once."""

    analyst: str
    salt: bytes
    digest: bytes

    def matches(self, token: str) -> bool:
        candidate = hashlib.sha256(self.salt + token.encode("utf-8")).digest()
        return hmac.compare_digest(candidate, self.digest)


class TokenStore:
    """Finds the analyst a bearer token belongs to.

    A token not seen yet is checked against every stored hash, each computed and compared
    whatever the outcome, so the time taken does not say which analyst (if any) nearly matched.
    A token that matched before is found by its keyed HMAC and checked against its own hash.
    """

    def __init__(self, tokens: list[StoredToken]) -> None:
        self._tokens = tokens
        self._key = secrets.token_bytes(32)  # this process's index key: never stored, never sent
        self._index: dict[bytes, StoredToken] = {}  # HMAC(key, token) → its analyst's stored hash

    def analyst_for(self, token: str | None) -> str | None:
        if not token or len(token) > 512:
            return None
        encoded = token.encode("utf-8")
        mark = hmac.digest(self._key, encoded, "sha256")
        filed = self._index.get(mark)
        if filed is not None and filed.matches(token):
            return filed.analyst
        found: StoredToken | None = None
        for stored in self._tokens:
            if stored.matches(token) and found is None:
                found = stored
        if found is None:
            return None
        self._index[mark] = found
        return found.analyst
