"""The one cell grammar: how a text cell is read as a number or a boolean, and how a typed value
is written as text, the same on every engine (docs/engines.md, "One cell grammar").

This module is the single source of the rules. Each rule exists three times, and the three must
give the same value for every cell: a pure-Python reference (the specification, used by the
tests), a Polars expression and a Spark Column expression. Every engine first checks the text
against the same regular expression (written once, below) and only then casts the text that
passed, non-strictly; text that is not valid is null, never an error, and no message quotes a
cell. So what one line holds changes that one record only, and only in the cells it holds.

**Spaces.** A cell read as a number or a boolean may start and end with ASCII spaces (U+0020)
and tabs (U+0009); they are ignored. No other character is: a no-break space, any other
Unicode space, a NUL, a carriage return or a byte-order mark makes the cell not a number (null).
A cell read as text is kept exactly as the reader gave it (nothing is trimmed).

**Integers** (a declared ``integer`` column): an optional ``+`` or ``-`` then one or more ASCII
digits (``[+-]?[0-9]+``; leading zeros allowed); the value must fit in a signed 64-bit
integer, else null. Nothing else: no fraction (``5.0`` is null), no exponent, no ``_``.

**Numbers** (a declared ``float`` column, and an untyped column read as numbers by a bounded
statistic, a comparison with a number or an order): an optional sign, digits with an optional
fraction (``5``, ``5.``, ``.5``, ``5.25``; at least one digit), then an optional exponent
(``e`` or ``E``, an optional sign, digits): ``[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][+-]?[0-9]+)?``.
The value is the nearest float64 (IEEE round to nearest, ties to even: a magnitude beyond the
largest float64 is ±infinity, as ``1e999``, which a bounded statistic clamps to a bound). Not
numbers (null): ``inf``, ``Infinity``, ``NaN`` in any spelling, hexadecimal (``0x1p4``), type
suffixes (``7d``, ``2.5f``, ``5L``), digit separators (``1_000``, ``1,000``), non-ASCII digits.

**Booleans** (a declared ``boolean`` column): ``true`` or ``false``, in any mix of ASCII upper
and lower case (``TRUE``, ``True``). Nothing else: not ``1``/``0``, ``yes``/``no``, ``t``/``f``.

**Dates and timestamps** are never read from text: no declarable type is one (``dtypes=``
declares integer, float, string or boolean), so a cell that looks like a date stays text and
compares as text. A date or timestamp *value* (a Parquet or frame column declared ``string``, a
public join key) is written as below, and matches a text cell holding exactly that form.

**Values written as text** (a typed column declared ``string``, and a public join key compared
with a text key): an integer in decimal digits with a ``-`` when negative; a boolean ``true`` or
``false``; a date ``YYYY-MM-DD``; a timestamp ``YYYY-MM-DD HH:MM:SS.ffffff`` (always six digits
of fraction, microseconds, finer digits dropped; a time-zone-aware timestamp in UTC, with no
offset written); a float as Python's ``repr`` writes it: the shortest digits that read back as
the same float64, positional when the decimal exponent n is in -4 ≤ n < 16 (``2.5``,
``100.0``, ``0.0001``), else scientific with a sign and at least two exponent digits
(``1e+20``, ``1.5e-05``); ``inf``, ``-inf``, ``nan`` for the non-finite values, ``-0.0`` kept.
(Polars takes the digits from its own shortest float text; Spark tries 1 to 17 significant
digits with Java's ``%e`` and keeps the first that reads back as the value, since the JVM's
``Double.toString`` before Java 19 is not always the shortest, e.g. ``9.999999999999999E22``
for 1e23.)

Outside the grammar: a decimal, time, duration, binary, list or struct declared ``string`` is
written by each engine's own cast to text, and a date or timestamp outside the years 1–9999
as each engine's formatter writes it; these may differ between the engines.

**The lone byte-order mark.** Only the file's leading byte-order mark is dropped (see
:mod:`dpwitness.io.reader`); a U+FEFF at the start of a record is an ordinary character of its first
cell. A record that is only U+FEFF, even as the file's last line with no final newline, is one
record whose first cell is the text ``"\\ufeff"`` (not a number, not a boolean).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl
    from pyspark.sql import Column

#: The characters ignored around a number or a boolean: ASCII space and tab only.
SPACES = " \t"
_SPACE = "[ \\t]*"
#: The grammar's three patterns (the cell without the surrounding spaces), written once.
INTEGER = "[+-]?[0-9]+"
NUMBER = "[+-]?(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
BOOLEAN = "[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]"  # explicit classes: no engine's Unicode case folding
_INT64 = (-(1 << 63), (1 << 63) - 1)


def _anchored(pattern: str, *, java: bool) -> str:
    """``pattern`` as the whole cell between spaces. Rust's ``^``/``$`` (no multi-line flag) are the
    text's ends, and Polars matches them faster than ``\\A``/``\\z``; Java's ``$`` also matches
    before a final ``\\r``, so Spark's pattern ends with ``\\z``."""
    return f"\\A{_SPACE}(?:{pattern}){_SPACE}\\z" if java else f"^{_SPACE}(?:{pattern}){_SPACE}$"


# --- the reference (pure Python: the specification the engines are tested against) ----------


def _body(cell: str | None, pattern: str) -> str | None:
    if cell is None:
        return None
    match = re.fullmatch(f"{_SPACE}({pattern}){_SPACE}", cell)
    return match.group(1) if match else None


def read_integer(cell: str | None) -> int | None:
    """A cell read as an integer under the grammar (None: not one).

    :param cell: the cell's text as the reader gave it (None: a null cell).
    """
    body = _body(cell, INTEGER)
    if body is None:
        return None
    value = int(body)
    return value if _INT64[0] <= value <= _INT64[1] else None


def read_number(cell: str | None) -> float | None:
    """A cell read as a float64 number under the grammar (None: not one).

    :param cell: the cell's text as the reader gave it (None: a null cell).
    """
    body = _body(cell, NUMBER)
    if body is None:
        return None
    return float(body)


def read_boolean(cell: str | None) -> bool | None:
    """A cell read as a boolean under the grammar (None: not one).

    :param cell: the cell's text as the reader gave it (None: a null cell).
    """
    body = _body(cell, BOOLEAN)
    return None if body is None else body.lower() == "true"


def write(value: Any) -> str | None:
    """A typed value written as text under the grammar (None stays None).

    :param value: an int, float, bool, date or datetime (anything else is written with ``str``).
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return str(value.strftime("%Y-%m-%d %H:%M:%S.%f"))
    if isinstance(value, dt.date):
        return str(value.strftime("%Y-%m-%d"))
    return str(value)


# --- Polars ------------------------------------------------------------------------------------


def polars_integer(text: pl.Expr) -> pl.Expr:
    """Polars: a text expression read as Int64 under the grammar (non-strict: not valid → null).

    :param text: a String expression.
    """
    import polars as pl

    valid = pl.when(text.str.contains(_anchored(INTEGER, java=False))).then(text.str.strip_chars(SPACES))
    return valid.cast(pl.Int64, strict=False)


def polars_number(text: pl.Expr) -> pl.Expr:
    """Polars: a text expression read as Float64 under the grammar (non-strict: not valid → null).

    :param text: a String expression.
    """
    import polars as pl

    valid = pl.when(text.str.contains(_anchored(NUMBER, java=False))).then(text.str.strip_chars(SPACES))
    return valid.cast(pl.Float64, strict=False)


def polars_boolean(text: pl.Expr) -> pl.Expr:
    """Polars: a text expression read as Boolean under the grammar (non-strict: not valid → null).

    :param text: a String expression.
    """
    import polars as pl

    valid = pl.when(text.str.contains(_anchored(BOOLEAN, java=False))).then(text.str.strip_chars(SPACES))
    return valid.str.to_lowercase() == "true"


def polars_text(value: pl.Expr, dtype: Any) -> pl.Expr:
    """Polars: a column of type ``dtype`` written as text under the grammar.

    :param value: the column's expression.
    :param dtype: its Polars type (text is returned unchanged).
    """
    import polars as pl

    if dtype == pl.String:
        return value
    if dtype.is_float():
        return _polars_float_text(value.cast(pl.Float64))
    if isinstance(dtype, pl.Datetime):
        if dtype.time_zone is not None:
            value = value.dt.convert_time_zone("UTC")
        return value.dt.strftime("%Y-%m-%d %H:%M:%S%.6f")
    if dtype == pl.Date:
        return value.dt.strftime("%Y-%m-%d")
    return value.cast(pl.String)


_ZEROS = "0" * 24  # more than the zeros a positional float can need (n < 16 and n ≥ -4)


def _polars_float_text(value: pl.Expr) -> pl.Expr:
    import polars as pl

    native = value.cast(pl.String)  # the shortest round-trip digits, in Polars' own layout
    parts = native.str.extract_groups(_FLOAT_PARTS)
    whole, fraction = parts.struct.field("1"), parts.struct.field("2").fill_null("")
    exponent = parts.struct.field("3").fill_null("0").cast(pl.Int64)
    joined = whole + fraction
    digits = joined.str.strip_chars_start("0").str.strip_chars_end("0")
    trailing = joined.str.strip_chars_start("0").str.len_chars() - digits.str.len_chars()
    k = digits.str.len_chars().cast(pl.Int64)
    n = k - 1 + exponent - fraction.str.len_chars().cast(pl.Int64) + trailing.cast(pl.Int64)
    sign = pl.when(native.str.starts_with("-")).then(pl.lit("-")).otherwise(pl.lit(""))
    zeros = pl.lit(_ZEROS)
    large = digits + zeros.str.slice(0, (n - k + 1).clip(0)) + pl.lit(".0")
    middle = digits.str.slice(0, n + 1) + pl.lit(".") + digits.str.slice(n + 1)
    small = pl.lit("0.") + zeros.str.slice(0, (-n - 1).clip(0)) + digits
    mantissa = pl.when(k > 1).then(digits.str.slice(0, 1) + pl.lit(".") + digits.str.slice(1)).otherwise(digits)
    power = n.abs().cast(pl.String).str.zfill(2)
    scientific = mantissa + pl.lit("e") + pl.when(n < 0).then(pl.lit("-")).otherwise(pl.lit("+")) + power
    body = (
        pl.when(digits == "")
        .then(pl.lit("0.0"))
        .when((n < -4) | (n >= 16))
        .then(scientific)
        .when(n >= k - 1)
        .then(large)
        .when(n >= 0)
        .then(middle)
        .otherwise(small)
    )
    return (
        pl.when(value.is_nan())
        .then(pl.lit("nan"))
        .when(value == float("inf"))
        .then(pl.lit("inf"))
        .when(value == float("-inf"))
        .then(pl.lit("-inf"))
        .otherwise(sign + body)
    )


#: An engine's own float text (Rust's ``1e+20``, ``0.000015``; Java's ``1.0E20``, ``1.5E-5``):
#: the digits before and after the point and the exponent.
_FLOAT_PARTS = "\\A-?([0-9]+)(?:\\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?\\z"


# --- Spark -------------------------------------------------------------------------------------


def spark_integer(text: Column) -> Column:
    """Spark: a text column read as a long under the grammar (non-strict: not valid → null).

    :param text: a string Column.
    """
    from pyspark.sql import functions as F

    return F.when(text.rlike(_anchored(INTEGER, java=True)), F.btrim(text, F.lit(SPACES)).try_cast("long"))


def spark_number(text: Column) -> Column:
    """Spark: a text column read as a double under the grammar (non-strict: not valid → null).

    :param text: a string Column.
    """
    from pyspark.sql import functions as F

    return F.when(text.rlike(_anchored(NUMBER, java=True)), F.btrim(text, F.lit(SPACES)).try_cast("double"))


def spark_boolean(text: Column) -> Column:
    """Spark: a text column read as a boolean under the grammar (non-strict: not valid → null).

    :param text: a string Column.
    """
    from pyspark.sql import functions as F

    valid = text.rlike(_anchored(BOOLEAN, java=True))
    return F.when(valid, F.lower(F.btrim(text, F.lit(SPACES))) == F.lit("true"))


def spark_text(value: Column, dtype: Any) -> Column:
    """Spark: a column of Spark type ``dtype`` written as text under the grammar.

    :param value: the Column.
    :param dtype: its Spark type (text is returned unchanged).
    """
    from pyspark.sql import functions as F

    name = type(dtype).__name__
    if name in ("StringType", "VarcharType", "CharType"):
        return value
    if name in ("FloatType", "DoubleType"):
        return _spark_float_text(value.cast("double"))
    if name == "TimestampType":  # an instant: its wall time in UTC, whatever the session's zone
        return F.date_format(F.convert_timezone(None, F.lit("UTC"), value), "yyyy-MM-dd HH:mm:ss.SSSSSS")
    if name == "TimestampNTZType":
        return F.date_format(value, "yyyy-MM-dd HH:mm:ss.SSSSSS")
    if name == "DateType":
        return F.date_format(value, "yyyy-MM-dd")
    return value.try_cast("string")


def _spark_float_text(value: Column) -> Column:
    from pyspark.sql import functions as F

    # The shortest digits that read back as the value: the first of 1…17 significant digits that
    # does (the JVM's own Double.toString is not always the shortest before Java 19). Higher-order
    # functions bind each intermediate text once (a plain expression would repeat it per use).
    tries = F.array(*(F.format_string(f"%.{p}e", value) for p in range(17)))
    native = F.coalesce(F.get(F.filter(tries, lambda t: t.try_cast("double") == value), 0), value.cast("string"))
    infinite = F.lit(float("inf"))
    return (
        F.when(F.isnan(value), F.lit("nan"))
        .when(value == infinite, F.lit("inf"))
        .when(value == -infinite, F.lit("-inf"))
        .otherwise(F.get(F.transform(F.array(native), _spark_layout), 0))
    )


def _spark_layout(native: Column) -> Column:
    """Spark: a float's text (digits and exponent, any layout) laid out as Python's ``repr``."""
    from pyspark.sql import functions as F

    whole = F.regexp_extract(native, _FLOAT_PARTS, 1)
    fraction = F.regexp_extract(native, _FLOAT_PARTS, 2)
    exponent = F.coalesce(F.regexp_extract(native, _FLOAT_PARTS, 3).try_cast("long"), F.lit(0))
    joined = F.concat(whole, fraction)
    stripped = F.regexp_replace(joined, "\\A0+", "")
    digits = F.regexp_replace(stripped, "0+\\z", "")
    k = F.length(digits).cast("long")
    n = k - 1 + exponent - F.length(fraction) + (F.length(stripped) - F.length(digits))
    sign = F.when(native.startswith("-"), F.lit("-")).otherwise(F.lit(""))
    zeros = F.lit(_ZEROS)

    def head(text: Column, length: Column) -> Column:
        return text.substr(F.lit(1), F.greatest(length, F.lit(0)).cast("int"))

    def tail(text: Column, start: Column) -> Column:  # from the 0-based ``start`` to the end
        return text.substr((start + 1).cast("int"), F.lit(1 << 20))

    large = F.concat(digits, head(zeros, n - k + 1), F.lit(".0"))
    middle = F.concat(head(digits, n + 1), F.lit("."), tail(digits, n + 1))
    small = F.concat(F.lit("0."), head(zeros, -n - 1), digits)
    mantissa = F.when(k > 1, F.concat(head(digits, F.lit(1)), F.lit("."), tail(digits, F.lit(1)))).otherwise(digits)
    power = F.concat(F.when(F.abs(n) < 10, F.lit("0")).otherwise(F.lit("")), F.abs(n).cast("string"))
    scientific = F.concat(mantissa, F.lit("e"), F.when(n < 0, F.lit("-")).otherwise(F.lit("+")), power)
    body = (
        F.when(digits == "", F.lit("0.0"))
        .when((n < -4) | (n >= 16), scientific)
        .when(n >= k - 1, large)
        .when(n >= 0, middle)
        .otherwise(small)
    )
    return F.concat(sign, body)
