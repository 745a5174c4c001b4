"""Numbers as people read them: budgets without float noise, values at the precision their
interval justifies. Display only: a release's archived value (``Release.to_dict``) is exact."""

from __future__ import annotations

import math


def tidy(number: float) -> float:
    """``number`` cut to 12 significant digits: float noise from sums of shares removed
    (0.8999999999999999 → 0.9) for budgets shown or archived; never for released values."""
    if not math.isfinite(number) or number == 0:
        return number
    return float(f"{number:.12g}")


def figure(value: float, half_width: float) -> str:
    """``value`` at the precision its interval justifies: two significant digits of the
    half-width (± 3.2 → one decimal; ± 0.047 → three); a whole number (a rounded count) has
    none (32,561, not 32,561.0000). Without a finite width, six significant digits.
    ``half_width`` is the half-width of the value's interval, in the value's units."""
    number = float(value)
    if not math.isfinite(number):
        return str(number)
    if number.is_integer() and abs(number) < 2**53 and (not math.isfinite(half_width) or half_width >= 0.5):
        return f"{number:,.0f}"
    if not (math.isfinite(half_width) and half_width > 0):
        return f"{number:,.6g}"
    decimals = max(0, min(12, 1 - math.floor(math.log10(half_width))))
    return f"{number:,.{decimals}f}"


__all__ = ["figure", "tidy"]
