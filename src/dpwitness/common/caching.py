"""Caches that one caller cannot observe through another: an LRU per *cache scope*.

The sampler's calibrations and tables (:mod:`dpwitness.noise`) take tens of milliseconds to
build and about a millisecond to reuse, so a process-wide cache makes response time say
whether *anyone* used that (Δ, ε) before. The service therefore runs each request inside
``cache_scope(analyst)``: what is computed there is stored in, and looked up from, that
analyst's caches only, so one analyst's queries never change another's timings. Outside any
scope (the library, the CLI) the scope is ``None``: one process-wide cache, as before.

Each scope has its own bounded LRU (``maxsize`` entries; ``scoped_maxsize`` inside a named
scope); hits, misses and evictions in one scope depend only on that scope's own calls. A miss
always computes (so it costs the same whether or not another scope holds the value), then
the result is *interned*: if another scope already holds an equal entry for the same key, that
object is kept and the new one dropped, so scopes that ask for the same tables share their
memory. Worst case memory: (number of scopes) × ``scoped_maxsize`` entries. Standard library
only: imported by the noise layer.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

_SCOPE: contextvars.ContextVar[Hashable] = contextvars.ContextVar("dpwitness_cache_scope", default=None)

F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def cache_scope(scope: Hashable) -> Iterator[None]:
    """Inside, every scoped cache reads and writes only ``scope``'s entries."""
    token = _SCOPE.set(scope)
    try:
        yield
    finally:
        _SCOPE.reset(token)


def current_scope() -> Hashable:
    return _SCOPE.get()


def scoped_cache(maxsize: int, *, scoped_maxsize: int | None = None) -> Callable[[F], F]:
    """Like ``functools.lru_cache(maxsize)`` but with one independent LRU per cache scope."""
    per_scope = maxsize if scoped_maxsize is None else scoped_maxsize

    def decorate(function: F) -> F:
        stores: dict[Hashable, OrderedDict[Hashable, Any]] = {}
        computed: dict[Hashable, int] = {}  # misses per scope: what each scope paid to compute
        interned: weakref.WeakValueDictionary[Hashable, Any] = weakref.WeakValueDictionary()
        lock = threading.Lock()

        @functools.wraps(function)
        def cached(*args: Any, **kwargs: Any) -> Any:
            scope = _SCOPE.get()
            key = (args, tuple(sorted(kwargs.items())) if kwargs else ())  # the same keys, without sorting nothing
            with lock:
                store = stores.setdefault(scope, OrderedDict())
                if key in store:
                    store.move_to_end(key)
                    return store[key]
                computed[scope] = computed.get(scope, 0) + 1
            value = function(*args, **kwargs)  # even if another scope holds it: the same cost
            with lock:
                shared = interned.get(key)
                if shared is not None:
                    value = shared  # one copy in memory for every scope that asked
                else:
                    with contextlib.suppress(TypeError):  # not weak-referenceable (a tuple): kept per scope
                        interned[key] = value
                store[key] = value
                while len(store) > (maxsize if scope is None else per_scope):
                    store.popitem(last=False)
            return value

        def cache_clear() -> None:
            with lock:
                stores.clear()
                computed.clear()
                interned.clear()

        cached.cache_clear = cache_clear  # type: ignore[attr-defined]
        cached.scopes = lambda: list(stores)  # type: ignore[attr-defined]
        # how many values a scope has computed (its misses): a count, where a timing would depend on the load
        cached.computations = lambda scope=None: computed.get(scope, 0)  # type: ignore[attr-defined]
        return cached  # type: ignore[return-value]

    return decorate


__all__ = ["cache_scope", "current_scope", "scoped_cache"]
