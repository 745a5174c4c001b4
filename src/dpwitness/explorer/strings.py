"""Every user-facing string of the page, in one table per language.

The tables are JSON files in ``static/i18n/<lang>.json`` (English is complete and the
fallback); to add a translation, copy ``en.json`` to e.g. ``zh.json`` and translate the
values, keeping the keys and the ``{placeholders}``. Missing keys fall back to English.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from dpwitness.common.errors import ParameterError

STATIC = Path(__file__).resolve().parent / "static"
I18N = STATIC / "i18n"
DEFAULT_LANGUAGE = "en"


def languages() -> list[str]:
    """Language codes that have a strings table."""
    return sorted(path.stem for path in I18N.glob("*.json"))


@lru_cache(maxsize=16)
def _load(language: str) -> dict[str, str]:
    data: dict[str, Any] = json.loads((I18N / f"{language}.json").read_text(encoding="utf-8"))
    return {str(key): str(value) for key, value in data.items()}


def strings(language: str = DEFAULT_LANGUAGE) -> dict[str, str]:
    """The table for ``language``, English filling any gap."""
    if language not in languages():
        raise ParameterError("lang", f"one of {languages()}", language)
    table = dict(_load(DEFAULT_LANGUAGE))
    table.update(_load(language))
    return table
