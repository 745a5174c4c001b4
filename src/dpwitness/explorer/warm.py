"""Warming the caches, so that the first visit and slider moves are answered from memory.

Building a mechanism's tables costs 30-1000 ms (more for small ε); a cached answer ~5 ms.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from dpwitness.explorer import compute, planner, redteam

#: The live panel's defaults (the page's controls start here too: see static/index.html).
DEFAULTS: dict[str, Any] = {
    "epsilon": 0.5,
    "sensitivity": 1.0,
    "value": 42.0,
    "shift": 1.0,
    "seed": 1,
    "tamper": False,
    "releases": 1,
}
#: The ε slider's positions on the page (min 0.1, max 5, step 0.05), nearest the default first.
SLIDER_EPSILONS = sorted((compute.rounded(0.1 + 0.05 * i) for i in range(99)), key=lambda e: abs(e - DEFAULTS["epsilon"]))


#: The warm-up pauses while the page is being used, so it never competes with a request.
QUIET_S = 0.3
_last_request = 0.0


def note_request() -> None:
    """Called for every request: tells the background warm-up to step aside for a moment."""
    global _last_request
    _last_request = time.monotonic()


def warm_defaults() -> None:
    """Compute what the page asks for on load (about 0.2 s, before the server accepts requests)."""
    compute.live(**DEFAULTS)
    compute.live(**{**DEFAULTS, "tamper": True})
    compute.neighbour("sum", "add-remove", 1, 100.0)
    compute.myths(1.0)
    compute.worked_example(1.0)
    redteam.membership_analytic(DEFAULTS["sensitivity"], DEFAULTS["epsilon"], False)
    redteam.differencing(None, DEFAULTS["seed"])
    compute.vector("add-remove", 1.0, DEFAULTS["seed"])
    planner.plan(1.0, 0.2, 0.5, 0.3)  # the planner's previews (≈ 1 s: each reads the table's schema)


def warm_slider(stop: threading.Event | None = None, delay: float = 0.0) -> None:
    """Build the mechanism and witness for every ε slider position at the default Δ.

    Meant for a background thread; it waits ``delay`` seconds first (so it does not slow the
    first page load) and ``stop`` ends it early.
    """
    if stop is not None and stop.wait(delay):
        return
    for epsilon in SLIDER_EPSILONS:
        while time.monotonic() - _last_request < QUIET_S:
            if stop is not None and stop.wait(QUIET_S / 4):
                return
            if stop is None:
                time.sleep(QUIET_S / 4)
        if stop is not None and stop.is_set():
            return
        compute.witness_payload(DEFAULTS["sensitivity"], epsilon)
    if stop is None or not stop.is_set():
        compute.edge_cases(DEFAULTS["sensitivity"], 1.0)  # builds the ε = 0.01 and ε = 100 samplers
