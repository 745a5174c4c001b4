"""Token lookup: a token that matched before is found by its keyed HMAC and checked against its own
hash only; any other token is checked against every stored hash (issue 31, item 6)."""

from __future__ import annotations

from typing import Any

import pytest

from dpwitness.serve.auth import StoredToken, TokenStore, hash_token, new_token, parse_token_hash


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The analyst of every stored hash computed."""
    done: list[str] = []
    original = StoredToken.matches

    def counting(self: StoredToken, token: str) -> bool:
        done.append(self.analyst)
        return original(self, token)

    monkeypatch.setattr(StoredToken, "matches", counting)
    return done


def test_a_known_token_costs_one_check_and_any_other_every_check(checks: list[Any]) -> None:
    tokens = {f"analyst{i}": new_token() for i in range(33)}
    store = TokenStore([StoredToken(name, *parse_token_hash(hash_token(token))) for name, token in tokens.items()])
    assert store.analyst_for(tokens["analyst7"]) == "analyst7"
    assert len(checks) == 33  # its first use: the full scan
    checks.clear()
    for _ in range(3):
        assert store.analyst_for(tokens["analyst7"]) == "analyst7"
    assert checks == ["analyst7"] * 3  # then found by its HMAC, and checked against its own hash
    other = tokens["analyst8"]
    changed = other[:-1] + ("B" if other.endswith("A") else "A")  # one character off (a fixed "A" was the token 1 time in 64)
    for wrong in ("nope", tokens["analyst7"][:-1], tokens["analyst7"] + "x", changed):
        checks.clear()
        assert store.analyst_for(wrong) is None
        assert len(checks) == 33  # never filed: every analyst's hash, every time
    checks.clear()
    assert store.analyst_for(tokens["analyst8"]) == "analyst8" and len(checks) == 33


def test_two_stores_key_their_index_differently() -> None:
    stored = [StoredToken("a", *parse_token_hash(hash_token("t" * 43)))]
    one, two = TokenStore(stored), TokenStore(stored)
    assert one.analyst_for("t" * 43) == two.analyst_for("t" * 43) == "a"
    assert one._key != two._key and set(one._index).isdisjoint(two._index)
