"""The findings table's catalogue (issue 28 item 6): release functions written as each library's docs show them.

Each function takes a Polars table and returns the library's release, nothing else (as in
check_cases.py, whose functions are reused here where the same call works across releases).
:data:`CATALOGUE` says, per function: its library, the ``--columns`` JSON, the claimed ε, the
releases it applies to, the verdict expected per range of releases and, for a known bug, its
public reference with the releases that have it and those that fixed it (or, when no release
fixed it, the correct usage that serves as its control). bench/anchors/findings.py runs
``dpwitness check`` on every (release venv, entry) that applies and writes docs/findings.md.

Run one by hand in a release's venv:
``.venv-versions/opendp-0.14.2/bin/dpwitness check bench/anchors/findings_catalogue.py:opendp_rr_bitvec
--columns '{"question": [0, 7]}' --epsilon 0.8109302162163288``.
"""

from __future__ import annotations

import contextlib
import importlib
import re
from dataclasses import dataclass, field
from typing import Any

import polars as pl

# The functions that work across releases are check_cases.py's, re-exported here so that the check loads
# them from this module (``findings_catalogue.py:NAME``); a relocated reproduction script that embeds
# this module's source has no check_cases beside it and needs none of them.
with contextlib.suppress(ImportError):
    from check_cases import (  # noqa: F401
        diffprivlib_geometric,
        diffprivlib_laplace,
        diffprivlib_linear_regression,
        opendp_geometric,
        opendp_laplace,
        pipelinedp_sum,
        pydp_bounded_sum,
        pydp_count,
        smartnoise_sum,
    )

# Each library imported at the top of the module, as their docs import them, where it is installed (a
# release venv holds one library; an import that fails is left out). dpwitness installs the adapters of
# the libraries imported when the check starts, and of those the function imports on its first run only
# when that run saw no noise call: diffprivlib 0.6.0-0.6.5 with scikit-learn 1.6 import scipy.stats on
# their first run, whose import draws from NumPy's generators (seen as noise calls), so an import inside
# the function left diffprivlib unhooked (docs/findings.md, "Tool faults met").
for _module in ("diffprivlib.mechanisms", "diffprivlib.tools", "diffprivlib.models", "opendp.prelude", "pydp", "pipeline_dp"):
    with contextlib.suppress(Exception):
        importlib.import_module(_module)

#: The verdicts an entry may expect: "violated" (a finding), "ok" (no finding, the audit says ok),
#: "not violated" (ok or an honest inconclusive: no finding).
VERDICTS = ("violated", "ok", "not violated")
#: What an entry is: a published bug (public reference), a bug known here without a public report,
#: a new finding of this table, or a control (a correct usage, no finding expected).
KINDS = ("published", "unpublished", "new", "control")


def version_key(version: str) -> tuple[int, ...]:
    """``"0.6.10"`` → ``(0, 6, 10)``."""
    return tuple(int(part) for part in re.findall(r"\d+", version))


@dataclass(frozen=True)
class Range:
    """Releases ``low ≤ v < high`` (``high`` empty: no upper end)."""

    low: str
    high: str = ""

    def __contains__(self, version: object) -> bool:
        if not isinstance(version, str):
            return False
        key = version_key(version)
        return key >= version_key(self.low) and (not self.high or key < version_key(self.high))

    def __str__(self) -> str:
        return f"≥ {self.low}" + (f", < {self.high}" if self.high else "")


@dataclass(frozen=True)
class Entry:
    """One catalogue function and what the table expects of it."""

    name: str
    library: str
    columns: str
    what: str
    kind: str
    applies: Range
    #: (releases, expected verdict), the ranges disjoint and covering ``applies``.
    expected: tuple[tuple[Range, str], ...]
    epsilon: float = 1.0
    #: The public reference (an issue, PR or paper URL) of a published bug; "" otherwise.
    reference: str = ""
    #: The releases that have the bug, and those that fixed it (None: no release fixed it yet).
    buggy: Range | None = None
    fixed: Range | None = None
    #: The catalogue entry that is the correct usage of the same call (a control), when no release fixed the bug.
    control: str = ""
    #: The check's CPU budget (--max-seconds) and any other flags.
    max_seconds: float = 30.0
    flags: tuple[str, ...] = field(default_factory=tuple)
    note: str = ""
    #: Why the check can miss it (shown beside a miss in docs/findings.md); "" when nothing is known.
    miss: str = ""

    def expected_for(self, version: str) -> str | None:
        """The verdict expected on ``version`` (None: the entry does not apply to it)."""
        if version not in self.applies:
            return None
        return next((verdict for releases, verdict in self.expected if version in releases), None)


# --- diffprivlib -------------------------------------------------------------------------------


def diffprivlib_histogram_weights(table: pl.DataFrame) -> Any:
    """tools.histogram with a weight per record, as numpy.histogram takes them (the docs' ``weights``)."""
    from diffprivlib import tools

    counts, _ = tools.histogram(table["x"].to_numpy(), epsilon=1.0, bins=2, range=(0, 1), weights=table["w"].to_numpy())
    return counts


def diffprivlib_histogram(table: pl.DataFrame) -> Any:
    """tools.histogram without weights (its control: one record moves one bin by 1)."""
    from diffprivlib import tools

    counts, _ = tools.histogram(table["x"].to_numpy(), epsilon=1.0, bins=2, range=(0, 1))
    return counts


def diffprivlib_linear_regression_symmetric(table: pl.DataFrame) -> Any:
    """LinearRegression with bounds symmetric about 0 and values inside them: #105's lower-bound-only
    sensitivity is then right (the control of #105)."""
    from diffprivlib.models import LinearRegression

    model = LinearRegression(bounds_X=(-100, 100), bounds_y=(-100, 100), fit_intercept=False, epsilon=1.0)
    return model.fit(table.select("x").to_numpy(), table["y"].to_numpy()).coef_


def diffprivlib_linear_regression_unclipped(table: pl.DataFrame) -> Any:
    """The same model on values that may lie outside the declared bounds (the bounds are a promise
    diffprivlib keeps by clipping; with fit_intercept=False it never clips)."""
    from diffprivlib.models import LinearRegression

    model = LinearRegression(bounds_X=(-100, 100), bounds_y=(-100, 100), fit_intercept=False, epsilon=1.0)
    return model.fit(table.select("x").to_numpy(), table["y"].to_numpy()).coef_


# --- OpenDP ------------------------------------------------------------------------------------

#: ε of the bit-vector randomized response below: 2·m·ln((2 − f)/f) with m = 1, f = 0.8.
RR_BITVEC_EPSILON = 0.8109302162163288
#: ε of the categorical randomized response below: ln(p/(1 − p)) with p = 0.75.
RR_EPSILON = 1.0986122886681098


def opendp_rr_bitvec(table: pl.DataFrame) -> Any:
    """One respondent's ticked option among 8 as a bit vector (one byte), through OpenDP's bit-vector
    randomized response as its user guide shows it (``np.packbits(…, bitorder="little")``)."""
    import numpy as np
    import opendp.prelude as dp

    dp.enable_features("contrib")
    m_rr = dp.m.make_randomized_response_bitvec(dp.bitvector_domain(max_weight=1), dp.discrete_distance(), f=0.8)
    ticked = np.zeros(8, dtype=np.uint8)
    for question in table["question"].to_list():
        ticked[question] = 1
    return m_rr(np.packbits(ticked, bitorder="little").tobytes())


def opendp_rr_bitvec_last_option(table: pl.DataFrame) -> Any:
    """The same release, checked with a column that lets the respondent tick only the last option: every
    pair of neighbours then differs in the last bit, the one #2708 left unrandomized."""
    return opendp_rr_bitvec(table)


def opendp_rr_categorical(table: pl.DataFrame) -> Any:
    """One respondent's yes/no answer through OpenDP's categorical randomized response (the user guide's
    ``make_randomized_response(categories, prob=0.75)``); the table holds the answers given."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    rr = dp.m.make_randomized_response(["yes", "no"], prob=0.75)
    return rr("yes" if "yes" in table["answer"].to_list() else "no")


# --- SmartNoise Synth ---------------------------------------------------------------------------
# Written as snsynth's docs fit a synthesizer (``Synthesizer.create(name, epsilon=…)``, ``fit``, ``sample``);
# the categories declared the way snsynth allows, a ``TableTransformer`` fitted on a public table listing them
# (tests/support/targets_synth_user.py has the same functions for the adapter's tests).

with contextlib.suppress(ImportError):  # imported as the module loads, as the libraries above: its adapter goes in first
    import snsynth  # noqa: F401

#: The columns and their public categories (the entries' ``--columns``).
SYNTH_COLUMNS = '{"sex": ["F", "M"], "education": ["school", "college", "degree"]}'


def _synth_public_transformer() -> Any:
    """A transformer fitted on the public categories only (no private row is read)."""
    import pandas as pd
    from snsynth.transform import TableTransformer
    from snsynth.transform.label import LabelTransformer

    public = pd.DataFrame({"sex": ["F", "M", "F"], "education": ["school", "college", "degree"]})
    transformer = TableTransformer([LabelTransformer(nullable=False), LabelTransformer(nullable=False)])
    transformer.fit(public)
    return transformer


def synth_aim_declared(table: pl.DataFrame) -> Any:
    """AIM with declared categories, a fixed number of rows sampled."""
    from snsynth import Synthesizer

    synth = Synthesizer.create("aim", epsilon=1.0, rounds=2)
    synth.fit(table.to_pandas(), transformer=_synth_public_transformer())
    return synth.sample(10)


def synth_mst_declared(table: pl.DataFrame) -> Any:
    """MST with declared categories, a fixed number of rows sampled."""
    from snsynth import Synthesizer

    synth = Synthesizer.create("mst", epsilon=1.0)
    synth.fit(table.to_pandas(), transformer=_synth_public_transformer())
    return synth.sample(10)


def synth_mwem_declared(table: pl.DataFrame) -> Any:
    """MWEM with declared categories, a fixed number of rows sampled."""
    from snsynth import Synthesizer

    synth = Synthesizer.create("mwem", epsilon=1.0)
    synth.fit(table.to_pandas(), transformer=_synth_public_transformer())
    return synth.sample(10)


def synth_mwem_inferred(table: pl.DataFrame) -> Any:
    """MWEM as its quick start fits it: the categories inferred from the table."""
    from snsynth import Synthesizer

    synth = Synthesizer.create("mwem", epsilon=1.0)
    synth.fit(table.to_pandas(), categorical_columns=["sex", "education"])
    return synth.sample(10)


# --- the catalogue -----------------------------------------------------------------------------

_ALL = Range("0")
_DIFFPRIVLIB_LR = "https://github.com/IBM/differential-privacy-library/blob/0.6.6/diffprivlib/models/linear_regression.py"
#: snsynth's MST and AIM on mbi 1.x (its new API): 1.0.8 (1.0.7 is not on the index); 1.0.4-1.0.6 import mbi's
#: old API, never published on the index, so their MST and AIM do not run (bench/anchors/versions_setup.sh).
_SYNTH_MBI = Range("1.0.7")
#: The pull request that moved MST and AIM to mbi 1.x, bringing MST's known_total (merged for 1.0.8).
_SNSYNTH_MBI_PR = "https://github.com/opendp/smartnoise-sdk/pull/623"

CATALOGUE: tuple[Entry, ...] = (
    Entry(
        "diffprivlib_laplace",
        "diffprivlib",
        '{"x": [0.0, 1.0]}',
        "mechanisms.Laplace on a float sum at 0 vs 1: the porous float support (precision-based attacks)",
        "published",
        _ALL,
        ((_ALL, "violated"),),
        reference="https://arxiv.org/abs/2207.13793",
        buggy=_ALL,
        control="diffprivlib_geometric",
        note="Haney et al. 2022 (and Mironov 2012) for floating-point Laplace samplers; no diffprivlib release "
        "samples its float Laplace on a grid.",
    ),
    Entry(
        "diffprivlib_geometric",
        "diffprivlib",
        '{"x": [0, 1]}',
        "mechanisms.Geometric on a count",
        "control",
        _ALL,
        ((_ALL, "ok"),),
    ),
    Entry(
        "diffprivlib_histogram_weights",
        "diffprivlib",
        '{"x": [0.25, 0.75], "w": [0, 100]}',
        "tools.histogram(weights=…): noised with sensitivity 1 whatever the weights",
        "unpublished",
        _ALL,
        ((_ALL, "violated"),),
        control="diffprivlib_histogram",
        note="dpwitness's REFERENCES.md ('Bugs found in the anchors'); no public report found.",
    ),
    Entry(
        "diffprivlib_histogram",
        "diffprivlib",
        '{"x": [0.25, 0.75]}',
        "tools.histogram without weights",
        "control",
        _ALL,
        ((_ALL, "not violated"),),
    ),
    Entry(
        "diffprivlib_linear_regression",
        "diffprivlib",
        '{"x": [0.0, 50.0, 100.0], "y": [0.0, 100.0]}',
        "LinearRegression, bounds (0, 100): the X² term noised with sensitivity lower² = 0 (#105)",
        "published",
        _ALL,
        ((_ALL, "violated"),),
        reference="https://github.com/IBM/differential-privacy-library/issues/105",
        buggy=_ALL,
        control="diffprivlib_linear_regression_symmetric",
        note="Fix proposed in PR #110 (open); no release has it (0.6.6 is the latest on PyPI).",
    ),
    Entry(
        "diffprivlib_linear_regression_symmetric",
        "diffprivlib",
        '{"x": [-100.0, 0.0, 50.0, 100.0], "y": [-100.0, 0.0, 100.0]}',
        "LinearRegression, bounds (−100, 100), values inside them",
        "control",
        _ALL,
        ((_ALL, "not violated"),),
    ),
    Entry(
        "diffprivlib_linear_regression_unclipped",
        "diffprivlib",
        '{"x": "Float64", "y": "Float64"}',
        "LinearRegression(fit_intercept=False), bounds (−100, 100): X and y never clipped",
        "new",
        _ALL,
        ((_ALL, "violated"),),
        reference=_DIFFPRIVLIB_LR,
        buggy=_ALL,
        control="diffprivlib_linear_regression_symmetric",
        note="New here (see the write-up below): the clipping sits in the fit_intercept branch of _preprocess_data.",
    ),
    # OpenDP
    Entry(
        "opendp_laplace",
        "opendp",
        '{"x": [0.0, 0.5, 1.0]}',
        "make_sum >> then_laplace on a bounded float sum",
        "control",
        _ALL,
        ((_ALL, "ok"),),
        max_seconds=100.0,
        note="100 s of CPU, as in the public cases: with 30 s the audit stopped before its 80,000-run round on "
        "0.14.2, 0.15.1 and 0.16.0 (inconclusive, ε_lb 0.92, 0.91 and 0.90).",
    ),
    Entry("opendp_geometric", "opendp", '{"x": [0, 1, 2]}', "make_count >> make_geometric", "control", _ALL, ((_ALL, "ok"),)),
    Entry(
        "opendp_rr_bitvec",
        "opendp",
        '{"question": [0, 7]}',
        "make_randomized_response_bitvec: the last bit never randomized (#2708)",
        "published",
        _ALL,
        ((Range("0", "0.15.0"), "violated"), (Range("0.15.0"), "not violated")),
        epsilon=RR_BITVEC_EPSILON,
        reference="https://github.com/opendp/opendp/pull/2708",
        buggy=Range("0", "0.15.0"),
        fixed=Range("0.15.0"),
        note="CHANGELOG 0.15.0: 'Randomized response bitvec randomization was off-by-one [#2708]'.",
        miss="Every pair of inputs is at discrete distance 1, so the search has no shift to rank pairs by, and the "
        "audit (one pair) can take a pair that differs in bit 0 only; its loss is then ln 1.5 ≈ 0.405, one randomized "
        "bit at f = 0.8, what a correct release gives. The next entry gives the check neighbours that differ in the "
        "last option.",
    ),
    Entry(
        "opendp_rr_bitvec_last_option",
        "opendp",
        '{"question": [7]}',
        "the same, neighbours that differ in the last option only (the pair #2708 needs)",
        "published",
        _ALL,
        ((Range("0", "0.15.0"), "violated"), (Range("0.15.0"), "not violated")),
        epsilon=RR_BITVEC_EPSILON,
        reference="https://github.com/opendp/opendp/pull/2708",
        buggy=Range("0", "0.15.0"),
        fixed=Range("0.15.0"),
        note="With options 0 and 7 (the row above) the check may audit a pair that differs in bit 0 only.",
    ),
    Entry(
        "opendp_rr_categorical",
        "opendp",
        '{"answer": ["yes", "no"]}',
        "make_randomized_response over two listed answers",
        "control",
        _ALL,
        ((_ALL, "not violated"),),
        epsilon=RR_EPSILON,
    ),
    # python-dp
    Entry(
        "pydp_bounded_sum",
        "python-dp",
        '{"x": "Float64"}',
        "BoundedSum(dtype='float') on [0, 1]: the float sum's rounding moves it by more than 1",
        "published",
        _ALL,
        ((_ALL, "violated"),),
        reference="https://arxiv.org/abs/2207.10635",
        max_seconds=60.0,
        buggy=_ALL,
        control="pydp_count",
        note="Casacuberta, Shoemate, Vadhan, Wagaman, CCS 2022; no python-dp release accounts for float rounding.",
    ),
    Entry("pydp_count", "python-dp", '{"x": "Int64"}', "Count(dtype='int')", "control", _ALL, ((_ALL, "ok"),)),
    # PipelineDP, SmartNoise SQL
    Entry(
        "pipelinedp_sum",
        "pipeline-dp",
        '{"x": "Float64"}',
        "sum per public partition: one NaN value makes the release NaN",
        "unpublished",
        _ALL,
        ((_ALL, "violated"),),
        note="Found by dpwitness check (docs/targets.md, the public cases); no public report found.",
    ),
    Entry(
        "smartnoise_sum",
        "smartnoise-sql",
        '{"x": [0.0, 0.5, 1.0]}',
        "SELECT SUM(x) on a float column declared in [0, 1]",
        "control",
        _ALL,
        ((_ALL, "not violated"),),
    ),
    # SmartNoise Synth
    Entry(
        "synth_aim_declared",
        "smartnoise-synth",
        SYNTH_COLUMNS,
        "AIM with the categories declared (a TableTransformer fitted on the public categories)",
        "control",
        _SYNTH_MBI,
        ((_SYNTH_MBI, "not violated"),),
        max_seconds=60.0,
        note="1.0.8: inconclusive, no finding (10 small-table pairs: one run takes about 1 s); the audit finishes no "
        "round of 20,000 runs within its budget. AIM does not import in 1.0.5-1.0.6 (mbi's old API, not on the index).",
    ),
    Entry(
        "synth_mst_declared",
        "smartnoise-synth",
        SYNTH_COLUMNS,
        "MST with the categories declared: the exact row count passed to mbi's estimation as known_total",
        "new",
        _SYNTH_MBI,
        ((_SYNTH_MBI, "violated"),),
        reference=_SNSYNTH_MBI_PR,
        buggy=_SYNTH_MBI,
        control="synth_aim_declared",
        max_seconds=60.0,
        note="New here: 1.0.8's MST sets total = len(data.df) (mst/mst.py:113) and passes it, without noise, as "
        "known_total to mbi's mirror_descent (:122 through select, :126); it came with PR #623 (mbi 1.x). In 1.0.4-1.0.6 "
        "MST's FactoredInference estimated the total from the noisy marginals (read in their wheels), but their MST "
        "needs mbi's old API, not on the index, so it does not run here. No public report found.",
    ),
    Entry(
        "synth_mwem_declared",
        "smartnoise-synth",
        SYNTH_COLUMNS,
        "MWEM with the categories declared: its default number of iterations, ceil(log10 n)·10, read from the exact row count",
        "new",
        _ALL,
        ((_ALL, "violated"),),
        max_seconds=60.0,
        note="New here: mwem.py:363-366 (the same file in 1.0.5, 1.0.6 and 1.0.8) computes scale = np.sum(h.data), the "
        "exact count, and iterations = int(np.ceil(np.log10(scale))) * 10 when iterations is not given: the number of "
        "noise calls changes between 10 and 11 rows (21 calls, then 41), 100 and 101, 1000 and 1001. MWEM also starts "
        "its synthetic histogram at the exact total (mwem.py:479) and sizes it from the data's largest label "
        "(docs/targets.md). No public report found.",
    ),
    Entry(
        "synth_mwem_inferred",
        "smartnoise-synth",
        SYNTH_COLUMNS,
        "MWEM as its quick start fits it (categorical_columns): the categories inferred from the private table",
        "unpublished",
        _ALL,
        ((_ALL, "violated"),),
        control="synth_aim_declared",
        max_seconds=60.0,
        note="A usage pitfall (docs/targets.md): the transformer reads the category set from the private table, "
        "recorded as a release without noise (mwem.py:316). On 1.0.8 the first finding is the row-count-dependent "
        "number of iterations of the row above (22 calls on 10 rows, 42 on 11), found before a changed category set.",
    ),
)

BY_NAME: dict[str, Entry] = {entry.name: entry for entry in CATALOGUE}


def check_target(entry: Entry) -> str:
    """The module file the check loads the function from (this file: it imports check_cases' functions)."""
    return f"findings_catalogue.py:{entry.name}"
