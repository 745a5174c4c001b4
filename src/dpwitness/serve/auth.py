"""Analyst tokens: stored only as salted SHA-256 digests, compared in constant time.

Tokens are random 256-bit secrets made by :func:`new_token`, so a fast salted hash is
enough (there is nothing to brute-force); a per-token salt stops equal tokens from having
equal digests.  ``hmac.compare_digest`` keeps the comparison's timing independent of how
many bytes match.
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
    """Finds the analyst a bearer token belongs to, checking every stored hash.

    Every hash is computed and compared whatever the outcome, so the time taken does not say
    which analyst (if any) nearly matched.
    """

    def __init__(self, tokens: list[StoredToken]) -> None:
        self._tokens = tokens

    def analyst_for(self, token: str | None) -> str | None:
        if not token or len(token) > 512:
            return None
        found: str | None = None
        for stored in self._tokens:
            if stored.matches(token) and found is None:
                found = stored.analyst
        return found
