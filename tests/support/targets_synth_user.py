"""Plain functions fitting SmartNoise Synth synthesizers the way snsynth's documentation shows
(``Synthesizer.create(name, epsilon=…)``, ``fit``, ``sample``), for tests/targets/test_targets_synth.py.

They run only where snsynth is installed (``.venv-synth``, built by bench/anchors/setup.sh).
The categories are declared the way snsynth allows: a ``TableTransformer`` fitted on a public
table listing them (so the private table never decides the domain).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import polars as pl
from snsynth import Synthesizer
from snsynth.transform import TableTransformer
from snsynth.transform.label import LabelTransformer

#: The columns and their public categories (``dw.check(…, columns=COLUMNS)``).
COLUMNS = {"sex": ["F", "M"], "education": ["school", "college", "degree"]}


def public_transformer() -> TableTransformer:
    """A transformer fitted on the public categories only (no private row is read)."""
    public = pd.DataFrame({"sex": ["F", "M", "F"], "education": COLUMNS["education"]})
    transformer = TableTransformer([LabelTransformer(nullable=False), LabelTransformer(nullable=False)])
    transformer.fit(public)
    return transformer


def aim_declared(table: pl.DataFrame) -> Any:
    """AIM with declared categories, a fixed number of rows sampled."""
    synth = Synthesizer.create("aim", epsilon=1.0, rounds=2)
    synth.fit(table.to_pandas(), transformer=public_transformer())
    return synth.sample(10)


def mst_declared(table: pl.DataFrame) -> Any:
    """MST with declared categories, a fixed number of rows sampled."""
    synth = Synthesizer.create("mst", epsilon=1.0)
    synth.fit(table.to_pandas(), transformer=public_transformer())
    return synth.sample(10)


def mwem_declared(table: pl.DataFrame) -> Any:
    """MWEM with declared categories, a fixed number of rows sampled."""
    synth = Synthesizer.create("mwem", epsilon=1.0)
    synth.fit(table.to_pandas(), transformer=public_transformer())
    return synth.sample(10)


def mwem_inferred(table: pl.DataFrame) -> Any:
    """MWEM as its quick start fits it: the categories inferred from the table."""
    synth = Synthesizer.create("mwem", epsilon=1.0)
    synth.fit(table.to_pandas(), categorical_columns=["sex", "education"])
    return synth.sample(10)


def mwem_inferred_bounds(table: pl.DataFrame) -> Any:
    """MWEM with a continuous column whose bounds snsynth infers, spending ``preprocessor_eps``."""
    synth = Synthesizer.create("mwem", epsilon=3.0)
    synth.fit(table.to_pandas(), categorical_columns=["sex"], continuous_columns=["age"], preprocessor_eps=1.0)
    return synth.sample(10)


def dpctgan(table: pl.DataFrame) -> Any:
    """A GAN synthesizer (DP-SGD through Opacus): not hooked by the adapter."""
    synth = Synthesizer.create("dpctgan", epsilon=1.0)
    synth.fit(table.to_pandas(), categorical_columns=["sex", "education"])
    return synth.sample(10)


def own_noise(table: pl.DataFrame) -> Any:
    """A user calling snsynth's noise function directly, from a frame the adapter does not know."""
    from snsynth.mst import mst

    counts = table["sex"].value_counts(sort=True)["count"].to_numpy()
    return counts + mst.gaussian_noise(10.0, counts.size)
