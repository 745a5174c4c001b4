"""Reproduces a dpwitness finding: smartnoise-synth 1.0.5, the noise calls differ between two
neighbouring tables, whatever the noise.

Needs only the library (and polars, numpy). Exit status 1 when the bug shows."""
import math
import sys

import numpy as np
import polars as pl

import importlib
import random
import sys
import snsynth.base as _base
import snsynth.mwem as _mwem


def _importable(name):  # MST and AIM need an mbi that releases before 1.0.8 do not find: hooked where they import
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


_mst, _aim = _importable("snsynth.mst.mst"), _importable("snsynth.aim.aim")

CALLS = []  # (site, what, declared Δ, value before noise), in the order the library makes them


def PIN():
    np.random.seed(20260101)
    random.seed(20260101)


def _site(depth=2):
    frame = sys._getframe(depth)
    return frame, f"{frame.f_code.co_filename}:{frame.f_lineno}"


def _gaussian(sigma, size=None):  # records the marginal x; the measurement then reads 1.0 (a fixed transcript)
    frame, site = _site()
    x = np.asarray(frame.f_locals["x"], dtype=float)
    CALLS.append((site, f"gaussian noise on a marginal (σ = {sigma:.6g})", 1.0, x))
    return (1.0 - x).tolist()


def _laplace(self, sigma):
    frame, site = _site()
    actual = float(frame.f_locals["actual"])
    CALLS.append((site, f"laplace noise on a query (scale {sigma:.6g})", sigma * frame.f_locals["eps"], actual))
    return 1.0 - actual


def _uniform(choose):  # an exponential mechanism: recorded, and a pinned uniform pick
    def pick(*args, **kwargs):
        CALLS.append((_site()[1], "exponential mechanism", None, math.nan))
        return choose(*args, **kwargs)
    return pick


def _exact(what, value):  # a value the library takes from the data without noise (declared Δ = 0)
    CALLS.append((_site(3)[1], what, 0.0, value))


_original_initialize = _mwem.MWEMSynthesizer._initialize_a
_original_train_data = _base.Synthesizer._get_train_data


def _mst_total(self, data, epsilon, delta):
    _exact("known_total = the exact row count (no noise)", len(data.df))
    return _original_mst(self, data, epsilon, delta)  # set below, where MST imports


def _initial_total(self, histogram, dimensions):
    _exact("the synthetic histogram starts at the exact total (no noise)", float(np.sum(histogram)))
    return _original_initialize(self, histogram, dimensions)


def _train_data(self, data, *ignore, **kwargs):
    transformer = kwargs.get("transformer")
    declared = transformer is not None and not isinstance(transformer, dict) and transformer.fit_complete
    train = _original_train_data(self, data, *ignore, **kwargs)
    if not declared:
        _exact("categories inferred from the data (no noise)", np.asarray(self._transformer.cardinality, dtype=float))
    return train


def _with_sample(cls):
    original = cls.sample

    def sample(self, samples=None, *args, **kwargs):
        if samples is None:
            _exact("sample() draws the exact row count (no noise)", self.num_rows)
        return original(self, samples, *args, **kwargs)

    cls.sample = sample


_mwem.MWEMSynthesizer._laplace = _laplace
_mwem.MWEMSynthesizer._exponential_mechanism = _uniform(
    lambda self, hist, synth_hist, queries, eps, measurements, i: (
        np.random.choice([q for q in range(len(queries)) if q not in measurements])
    )
)
_mwem.MWEMSynthesizer._initialize_a = _initial_total
_base.Synthesizer._get_train_data = _train_data
_with_sample(_mwem.MWEMSynthesizer)
if _mst is not None:
    _mst.gaussian_noise = _gaussian
    _mst.MSTSynthesizer.exponential_mechanism = _uniform(
        lambda self, q, eps, sensitivity, prng=np.random, monotonic=False: prng.choice(np.asarray(q).size)
    )
    _original_mst = _mst.MSTSynthesizer.MST
    _mst.MSTSynthesizer.MST = _mst_total
    _with_sample(_mst.MSTSynthesizer)
if _aim is not None:
    _aim.gaussian_noise = _gaussian
    _aim.exponential_mechanism = _uniform(
        lambda qualities, epsilon, sensitivity=1.0, base_measure=None: list(qualities)[int(np.random.choice(len(qualities)))]
    )
    _with_sample(_aim.AIMSynthesizer)

import importlib
import os
import types

# the checked module, as it was checked (used when it is not importable here)
_SOURCE = '"""The findings table\'s catalogue (issue 28 item 6): release functions written as each library\'s docs show them.\n\nEach function takes a Polars table and returns the library\'s release, nothing else (as in\ncheck_cases.py, whose functions are reused here where the same call works across releases).\n:data:`CATALOGUE` says, per function: its library, the ``--columns`` JSON, the claimed ε, the\nreleases it applies to, the verdict expected per range of releases and, for a known bug, its\npublic reference with the releases that have it and those that fixed it (or, when no release\nfixed it, the correct usage that serves as its control). bench/anchors/findings.py runs\n``dpwitness check`` on every (release venv, entry) that applies and writes docs/findings.md.\n\nRun one by hand in a release\'s venv:\n``.venv-versions/opendp-0.14.2/bin/dpwitness check bench/anchors/findings_catalogue.py:opendp_rr_bitvec\n--columns \'{"question": [0, 7]}\' --epsilon 0.8109302162163288``.\n"""\n\nfrom __future__ import annotations\n\nimport contextlib\nimport importlib\nimport re\nfrom dataclasses import dataclass, field\nfrom typing import Any\n\nimport polars as pl\n\n# The functions that work across releases are check_cases.py\'s, re-exported here so that the check loads\n# them from this module (``findings_catalogue.py:NAME``); a relocated reproduction script that embeds\n# this module\'s source has no check_cases beside it and needs none of them.\nwith contextlib.suppress(ImportError):\n    from check_cases import (  # noqa: F401\n        diffprivlib_geometric,\n        diffprivlib_laplace,\n        diffprivlib_linear_regression,\n        opendp_geometric,\n        opendp_laplace,\n        pipelinedp_sum,\n        pydp_bounded_sum,\n        pydp_count,\n        smartnoise_sum,\n    )\n\n# Each library imported at the top of the module, as their docs import them, where it is installed (a\n# release venv holds one library; an import that fails is left out). dpwitness installs the adapters of\n# the libraries imported when the check starts, and of those the function imports on its first run only\n# when that run saw no noise call: diffprivlib 0.6.0-0.6.5 with scikit-learn 1.6 import scipy.stats on\n# their first run, whose import draws from NumPy\'s generators (seen as noise calls), so an import inside\n# the function left diffprivlib unhooked (docs/findings.md, "Tool faults met").\nfor _module in ("diffprivlib.mechanisms", "diffprivlib.tools", "diffprivlib.models", "opendp.prelude", "pydp", "pipeline_dp"):\n    with contextlib.suppress(Exception):\n        importlib.import_module(_module)\n\n#: The verdicts an entry may expect: "violated" (a finding), "ok" (no finding, the audit says ok),\n#: "not violated" (ok or an honest inconclusive: no finding).\nVERDICTS = ("violated", "ok", "not violated")\n#: What an entry is: a published bug (public reference), a bug known here without a public report,\n#: a new finding of this table, or a control (a correct usage, no finding expected).\nKINDS = ("published", "unpublished", "new", "control")\n\n\ndef version_key(version: str) -> tuple[int, ...]:\n    """``"0.6.10"`` → ``(0, 6, 10)``."""\n    return tuple(int(part) for part in re.findall(r"\\d+", version))\n\n\n@dataclass(frozen=True)\nclass Range:\n    """Releases ``low ≤ v < high`` (``high`` empty: no upper end)."""\n\n    low: str\n    high: str = ""\n\n    def __contains__(self, version: object) -> bool:\n        if not isinstance(version, str):\n            return False\n        key = version_key(version)\n        return key >= version_key(self.low) and (not self.high or key < version_key(self.high))\n\n    def __str__(self) -> str:\n        return f"≥ {self.low}" + (f", < {self.high}" if self.high else "")\n\n\n@dataclass(frozen=True)\nclass Entry:\n    """One catalogue function and what the table expects of it."""\n\n    name: str\n    library: str\n    columns: str\n    what: str\n    kind: str\n    applies: Range\n    #: (releases, expected verdict), the ranges disjoint and covering ``applies``.\n    expected: tuple[tuple[Range, str], ...]\n    epsilon: float = 1.0\n    #: The public reference (an issue, PR or paper URL) of a published bug; "" otherwise.\n    reference: str = ""\n    #: The releases that have the bug, and those that fixed it (None: no release fixed it yet).\n    buggy: Range | None = None\n    fixed: Range | None = None\n    #: The catalogue entry that is the correct usage of the same call (a control), when no release fixed the bug.\n    control: str = ""\n    #: The check\'s CPU budget (--max-seconds) and any other flags.\n    max_seconds: float = 30.0\n    flags: tuple[str, ...] = field(default_factory=tuple)\n    note: str = ""\n    #: Why the check can miss it (shown beside a miss in docs/findings.md); "" when nothing is known.\n    miss: str = ""\n\n    def expected_for(self, version: str) -> str | None:\n        """The verdict expected on ``version`` (None: the entry does not apply to it)."""\n        if version not in self.applies:\n            return None\n        return next((verdict for releases, verdict in self.expected if version in releases), None)\n\n\n# --- diffprivlib -------------------------------------------------------------------------------\n\n\ndef diffprivlib_histogram_weights(table: pl.DataFrame) -> Any:\n    """tools.histogram with a weight per record, as numpy.histogram takes them (the docs\' ``weights``)."""\n    from diffprivlib import tools\n\n    counts, _ = tools.histogram(table["x"].to_numpy(), epsilon=1.0, bins=2, range=(0, 1), weights=table["w"].to_numpy())\n    return counts\n\n\ndef diffprivlib_histogram(table: pl.DataFrame) -> Any:\n    """tools.histogram without weights (its control: one record moves one bin by 1)."""\n    from diffprivlib import tools\n\n    counts, _ = tools.histogram(table["x"].to_numpy(), epsilon=1.0, bins=2, range=(0, 1))\n    return counts\n\n\ndef diffprivlib_linear_regression_symmetric(table: pl.DataFrame) -> Any:\n    """LinearRegression with bounds symmetric about 0 and values inside them: #105\'s lower-bound-only\n    sensitivity is then right (the control of #105)."""\n    from diffprivlib.models import LinearRegression\n\n    model = LinearRegression(bounds_X=(-100, 100), bounds_y=(-100, 100), fit_intercept=False, epsilon=1.0)\n    return model.fit(table.select("x").to_numpy(), table["y"].to_numpy()).coef_\n\n\ndef diffprivlib_linear_regression_unclipped(table: pl.DataFrame) -> Any:\n    """The same model on values that may lie outside the declared bounds (the bounds are a promise\n    diffprivlib keeps by clipping; with fit_intercept=False it never clips)."""\n    from diffprivlib.models import LinearRegression\n\n    model = LinearRegression(bounds_X=(-100, 100), bounds_y=(-100, 100), fit_intercept=False, epsilon=1.0)\n    return model.fit(table.select("x").to_numpy(), table["y"].to_numpy()).coef_\n\n\n# --- OpenDP ------------------------------------------------------------------------------------\n\n#: ε of the bit-vector randomized response below: 2·m·ln((2 − f)/f) with m = 1, f = 0.8.\nRR_BITVEC_EPSILON = 0.8109302162163288\n#: ε of the categorical randomized response below: ln(p/(1 − p)) with p = 0.75.\nRR_EPSILON = 1.0986122886681098\n\n\ndef opendp_rr_bitvec(table: pl.DataFrame) -> Any:\n    """One respondent\'s ticked option among 8 as a bit vector (one byte), through OpenDP\'s bit-vector\n    randomized response as its user guide shows it (``np.packbits(…, bitorder="little")``)."""\n    import numpy as np\n    import opendp.prelude as dp\n\n    dp.enable_features("contrib")\n    m_rr = dp.m.make_randomized_response_bitvec(dp.bitvector_domain(max_weight=1), dp.discrete_distance(), f=0.8)\n    ticked = np.zeros(8, dtype=np.uint8)\n    for question in table["question"].to_list():\n        ticked[question] = 1\n    return m_rr(np.packbits(ticked, bitorder="little").tobytes())\n\n\ndef opendp_rr_bitvec_last_option(table: pl.DataFrame) -> Any:\n    """The same release, checked with a column that lets the respondent tick only the last option: every\n    pair of neighbours then differs in the last bit, the one #2708 left unrandomized."""\n    return opendp_rr_bitvec(table)\n\n\ndef opendp_rr_categorical(table: pl.DataFrame) -> Any:\n    """One respondent\'s yes/no answer through OpenDP\'s categorical randomized response (the user guide\'s\n    ``make_randomized_response(categories, prob=0.75)``); the table holds the answers given."""\n    import opendp.prelude as dp\n\n    dp.enable_features("contrib")\n    rr = dp.m.make_randomized_response(["yes", "no"], prob=0.75)\n    return rr("yes" if "yes" in table["answer"].to_list() else "no")\n\n\n# --- SmartNoise Synth ---------------------------------------------------------------------------\n# Written as snsynth\'s docs fit a synthesizer (``Synthesizer.create(name, epsilon=…)``, ``fit``, ``sample``);\n# the categories declared the way snsynth allows, a ``TableTransformer`` fitted on a public table listing them\n# (tests/support/targets_synth_user.py has the same functions for the adapter\'s tests).\n\nwith contextlib.suppress(ImportError):  # imported as the module loads, as the libraries above: its adapter goes in first\n    import snsynth  # noqa: F401\n\n#: The columns and their public categories (the entries\' ``--columns``).\nSYNTH_COLUMNS = \'{"sex": ["F", "M"], "education": ["school", "college", "degree"]}\'\n\n\ndef _synth_public_transformer() -> Any:\n    """A transformer fitted on the public categories only (no private row is read)."""\n    import pandas as pd\n    from snsynth.transform import TableTransformer\n    from snsynth.transform.label import LabelTransformer\n\n    public = pd.DataFrame({"sex": ["F", "M", "F"], "education": ["school", "college", "degree"]})\n    transformer = TableTransformer([LabelTransformer(nullable=False), LabelTransformer(nullable=False)])\n    transformer.fit(public)\n    return transformer\n\n\ndef synth_aim_declared(table: pl.DataFrame) -> Any:\n    """AIM with declared categories, a fixed number of rows sampled."""\n    from snsynth import Synthesizer\n\n    synth = Synthesizer.create("aim", epsilon=1.0, rounds=2)\n    synth.fit(table.to_pandas(), transformer=_synth_public_transformer())\n    return synth.sample(10)\n\n\ndef synth_mst_declared(table: pl.DataFrame) -> Any:\n    """MST with declared categories, a fixed number of rows sampled."""\n    from snsynth import Synthesizer\n\n    synth = Synthesizer.create("mst", epsilon=1.0)\n    synth.fit(table.to_pandas(), transformer=_synth_public_transformer())\n    return synth.sample(10)\n\n\ndef synth_mwem_declared(table: pl.DataFrame) -> Any:\n    """MWEM with declared categories, a fixed number of rows sampled."""\n    from snsynth import Synthesizer\n\n    synth = Synthesizer.create("mwem", epsilon=1.0)\n    synth.fit(table.to_pandas(), transformer=_synth_public_transformer())\n    return synth.sample(10)\n\n\ndef synth_mwem_inferred(table: pl.DataFrame) -> Any:\n    """MWEM as its quick start fits it: the categories inferred from the table."""\n    from snsynth import Synthesizer\n\n    synth = Synthesizer.create("mwem", epsilon=1.0)\n    synth.fit(table.to_pandas(), categorical_columns=["sex", "education"])\n    return synth.sample(10)\n\n\n# --- the catalogue -----------------------------------------------------------------------------\n\n_ALL = Range("0")\n_DIFFPRIVLIB_LR = "https://github.com/IBM/differential-privacy-library/blob/0.6.6/diffprivlib/models/linear_regression.py"\n#: snsynth\'s MST and AIM on mbi 1.x (its new API): 1.0.8 (1.0.7 is not on the index); 1.0.4-1.0.6 import mbi\'s\n#: old API, never published on the index, so their MST and AIM do not run (bench/anchors/versions_setup.sh).\n_SYNTH_MBI = Range("1.0.7")\n#: The pull request that moved MST and AIM to mbi 1.x, bringing MST\'s known_total (merged for 1.0.8).\n_SNSYNTH_MBI_PR = "https://github.com/opendp/smartnoise-sdk/pull/623"\n\nCATALOGUE: tuple[Entry, ...] = (\n    Entry(\n        "diffprivlib_laplace",\n        "diffprivlib",\n        \'{"x": [0.0, 1.0]}\',\n        "mechanisms.Laplace on a float sum at 0 vs 1: the porous float support (precision-based attacks)",\n        "published",\n        _ALL,\n        ((_ALL, "violated"),),\n        reference="https://arxiv.org/abs/2207.13793",\n        buggy=_ALL,\n        control="diffprivlib_geometric",\n        note="Haney et al. 2022 (and Mironov 2012) for floating-point Laplace samplers; no diffprivlib release "\n        "samples its float Laplace on a grid.",\n    ),\n    Entry(\n        "diffprivlib_geometric",\n        "diffprivlib",\n        \'{"x": [0, 1]}\',\n        "mechanisms.Geometric on a count",\n        "control",\n        _ALL,\n        ((_ALL, "ok"),),\n    ),\n    Entry(\n        "diffprivlib_histogram_weights",\n        "diffprivlib",\n        \'{"x": [0.25, 0.75], "w": [0, 100]}\',\n        "tools.histogram(weights=…): noised with sensitivity 1 whatever the weights",\n        "unpublished",\n        _ALL,\n        ((_ALL, "violated"),),\n        control="diffprivlib_histogram",\n        note="dpwitness\'s REFERENCES.md (\'Bugs found in the anchors\'); no public report found.",\n    ),\n    Entry(\n        "diffprivlib_histogram",\n        "diffprivlib",\n        \'{"x": [0.25, 0.75]}\',\n        "tools.histogram without weights",\n        "control",\n        _ALL,\n        ((_ALL, "not violated"),),\n    ),\n    Entry(\n        "diffprivlib_linear_regression",\n        "diffprivlib",\n        \'{"x": [0.0, 50.0, 100.0], "y": [0.0, 100.0]}\',\n        "LinearRegression, bounds (0, 100): the X² term noised with sensitivity lower² = 0 (#105)",\n        "published",\n        _ALL,\n        ((_ALL, "violated"),),\n        reference="https://github.com/IBM/differential-privacy-library/issues/105",\n        buggy=_ALL,\n        control="diffprivlib_linear_regression_symmetric",\n        note="Fix proposed in PR #110 (open); no release has it (0.6.6 is the latest on PyPI).",\n    ),\n    Entry(\n        "diffprivlib_linear_regression_symmetric",\n        "diffprivlib",\n        \'{"x": [-100.0, 0.0, 50.0, 100.0], "y": [-100.0, 0.0, 100.0]}\',\n        "LinearRegression, bounds (−100, 100), values inside them",\n        "control",\n        _ALL,\n        ((_ALL, "not violated"),),\n    ),\n    Entry(\n        "diffprivlib_linear_regression_unclipped",\n        "diffprivlib",\n        \'{"x": "Float64", "y": "Float64"}\',\n        "LinearRegression(fit_intercept=False), bounds (−100, 100): X and y never clipped",\n        "new",\n        _ALL,\n        ((_ALL, "violated"),),\n        reference=_DIFFPRIVLIB_LR,\n        buggy=_ALL,\n        control="diffprivlib_linear_regression_symmetric",\n        note="New here (see the write-up below): the clipping sits in the fit_intercept branch of _preprocess_data.",\n    ),\n    # OpenDP\n    Entry(\n        "opendp_laplace",\n        "opendp",\n        \'{"x": [0.0, 0.5, 1.0]}\',\n        "make_sum >> then_laplace on a bounded float sum",\n        "control",\n        _ALL,\n        ((_ALL, "ok"),),\n        max_seconds=100.0,\n        note="100 s of CPU, as in the public cases: with 30 s the audit stopped before its 80,000-run round on "\n        "0.14.2, 0.15.1 and 0.16.0 (inconclusive, ε_lb 0.92, 0.91 and 0.90).",\n    ),\n    Entry("opendp_geometric", "opendp", \'{"x": [0, 1, 2]}\', "make_count >> make_geometric", "control", _ALL, ((_ALL, "ok"),)),\n    Entry(\n        "opendp_rr_bitvec",\n        "opendp",\n        \'{"question": [0, 7]}\',\n        "make_randomized_response_bitvec: the last bit never randomized (#2708)",\n        "published",\n        _ALL,\n        ((Range("0", "0.15.0"), "violated"), (Range("0.15.0"), "not violated")),\n        epsilon=RR_BITVEC_EPSILON,\n        reference="https://github.com/opendp/opendp/pull/2708",\n        buggy=Range("0", "0.15.0"),\n        fixed=Range("0.15.0"),\n        note="CHANGELOG 0.15.0: \'Randomized response bitvec randomization was off-by-one [#2708]\'.",\n        miss="Every pair of inputs is at discrete distance 1, so the search has no shift to rank pairs by, and the "\n        "audit (one pair) can take a pair that differs in bit 0 only; its loss is then ln 1.5 ≈ 0.405, one randomized "\n        "bit at f = 0.8, what a correct release gives. The next entry gives the check neighbours that differ in the "\n        "last option.",\n    ),\n    Entry(\n        "opendp_rr_bitvec_last_option",\n        "opendp",\n        \'{"question": [7]}\',\n        "the same, neighbours that differ in the last option only (the pair #2708 needs)",\n        "published",\n        _ALL,\n        ((Range("0", "0.15.0"), "violated"), (Range("0.15.0"), "not violated")),\n        epsilon=RR_BITVEC_EPSILON,\n        reference="https://github.com/opendp/opendp/pull/2708",\n        buggy=Range("0", "0.15.0"),\n        fixed=Range("0.15.0"),\n        note="With options 0 and 7 (the row above) the check may audit a pair that differs in bit 0 only.",\n    ),\n    Entry(\n        "opendp_rr_categorical",\n        "opendp",\n        \'{"answer": ["yes", "no"]}\',\n        "make_randomized_response over two listed answers",\n        "control",\n        _ALL,\n        ((_ALL, "not violated"),),\n        epsilon=RR_EPSILON,\n    ),\n    # python-dp\n    Entry(\n        "pydp_bounded_sum",\n        "python-dp",\n        \'{"x": "Float64"}\',\n        "BoundedSum(dtype=\'float\') on [0, 1]: the float sum\'s rounding moves it by more than 1",\n        "published",\n        _ALL,\n        ((_ALL, "violated"),),\n        reference="https://arxiv.org/abs/2207.10635",\n        max_seconds=60.0,\n        buggy=_ALL,\n        control="pydp_count",\n        note="Casacuberta, Shoemate, Vadhan, Wagaman, CCS 2022; no python-dp release accounts for float rounding.",\n    ),\n    Entry("pydp_count", "python-dp", \'{"x": "Int64"}\', "Count(dtype=\'int\')", "control", _ALL, ((_ALL, "ok"),)),\n    # PipelineDP, SmartNoise SQL\n    Entry(\n        "pipelinedp_sum",\n        "pipeline-dp",\n        \'{"x": "Float64"}\',\n        "sum per public partition: one NaN value makes the release NaN",\n        "unpublished",\n        _ALL,\n        ((_ALL, "violated"),),\n        note="Found by dpwitness check (docs/targets.md, the public cases); no public report found.",\n    ),\n    Entry(\n        "smartnoise_sum",\n        "smartnoise-sql",\n        \'{"x": [0.0, 0.5, 1.0]}\',\n        "SELECT SUM(x) on a float column declared in [0, 1]",\n        "control",\n        _ALL,\n        ((_ALL, "not violated"),),\n    ),\n    # SmartNoise Synth\n    Entry(\n        "synth_aim_declared",\n        "smartnoise-synth",\n        SYNTH_COLUMNS,\n        "AIM with the categories declared (a TableTransformer fitted on the public categories)",\n        "control",\n        _SYNTH_MBI,\n        ((_SYNTH_MBI, "not violated"),),\n        max_seconds=60.0,\n        note="1.0.8: inconclusive, no finding (10 small-table pairs: one run takes about 1 s); the audit finishes no "\n        "round of 20,000 runs within its budget. AIM does not import in 1.0.5-1.0.6 (mbi\'s old API, not on the index).",\n    ),\n    Entry(\n        "synth_mst_declared",\n        "smartnoise-synth",\n        SYNTH_COLUMNS,\n        "MST with the categories declared: the exact row count passed to mbi\'s estimation as known_total",\n        "new",\n        _SYNTH_MBI,\n        ((_SYNTH_MBI, "violated"),),\n        reference=_SNSYNTH_MBI_PR,\n        buggy=_SYNTH_MBI,\n        control="synth_aim_declared",\n        max_seconds=60.0,\n        note="New here: 1.0.8\'s MST sets total = len(data.df) (mst/mst.py:113) and passes it, without noise, as "\n        "known_total to mbi\'s mirror_descent (:122 through select, :126); it came with PR #623 (mbi 1.x). In 1.0.4-1.0.6 "\n        "MST\'s FactoredInference estimated the total from the noisy marginals (read in their wheels), but their MST "\n        "needs mbi\'s old API, not on the index, so it does not run here. No public report found.",\n    ),\n    Entry(\n        "synth_mwem_declared",\n        "smartnoise-synth",\n        SYNTH_COLUMNS,\n        "MWEM with the categories declared: its default number of iterations, ceil(log10 n)·10, read from the exact row count",\n        "new",\n        _ALL,\n        ((_ALL, "violated"),),\n        max_seconds=60.0,\n        note="New here: mwem.py:363-366 (the same file in 1.0.5, 1.0.6 and 1.0.8) computes scale = np.sum(h.data), the "\n        "exact count, and iterations = int(np.ceil(np.log10(scale))) * 10 when iterations is not given: the number of "\n        "noise calls changes between 10 and 11 rows (21 calls, then 41), 100 and 101, 1000 and 1001. MWEM also starts "\n        "its synthetic histogram at the exact total (mwem.py:479) and sizes it from the data\'s largest label "\n        "(docs/targets.md). No public report found.",\n    ),\n    Entry(\n        "synth_mwem_inferred",\n        "smartnoise-synth",\n        SYNTH_COLUMNS,\n        "MWEM as its quick start fits it (categorical_columns): the categories inferred from the private table",\n        "unpublished",\n        _ALL,\n        ((_ALL, "violated"),),\n        control="synth_aim_declared",\n        max_seconds=60.0,\n        note="A usage pitfall (docs/targets.md): the transformer reads the category set from the private table, "\n        "recorded as a release without noise (mwem.py:316). On 1.0.8 the first finding is the row-count-dependent "\n        "number of iterations of the row above (22 calls on 10 rows, 42 on 11), found before a changed category set.",\n    ),\n)\n\nBY_NAME: dict[str, Entry] = {entry.name: entry for entry in CATALOGUE}\n\n\ndef check_target(entry: Entry) -> str:\n    """The module file the check loads the function from (this file: it imports check_cases\' functions)."""\n    return f"findings_catalogue.py:{entry.name}"\n'
sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)), os.getcwd()]
try:
    _module = importlib.import_module('findings_catalogue')
except ModuleNotFoundError as _missing:
    if _missing.name != 'findings_catalogue' or _SOURCE is None:
        raise
    _module = types.ModuleType('findings_catalogue')
    sys.modules['findings_catalogue'] = _module
    exec(compile(_SOURCE, 'findings_catalogue.py', "exec"), _module.__dict__)
fn = _module
for _part in 'synth_mwem_inferred'.split("."):
    fn = getattr(fn, _part)

def table(runs):
    # runs of identical rows: (row, how many times), in order
    index = np.repeat(np.arange(len(runs)), [times for _, times in runs])
    schema = {'sex': pl.String, 'education': pl.String}
    return pl.DataFrame(
        {name: pl.Series(name, [row[i] for row, _ in runs], dtype=schema[name], strict=False).gather(index)
         for i, name in enumerate(schema)}
    )

D = [(('F', 'school',), 10)]
D_PRIME = [(('F', 'school',), 11)]
SHAPES = False


def shape(value):
    if isinstance(value, (bytes, bytearray, str)):
        return (type(value).__name__, len(value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted(map(repr, value))))
    return ("shape", tuple(np.shape(value))) if hasattr(value, "shape") or isinstance(value, (list, tuple)) else ()


def transcript(runs):
    CALLS.clear()
    globals().get("PIN", lambda: None)()  # the library's own randomness, pinned (if it has any)
    fn(table(runs))
    return [(site, mechanism, declared, *(shape(value) if SHAPES else ()))
            for site, mechanism, declared, value in CALLS]


a, b = transcript(D), transcript(D_PRIME)
rows = [sum(times for _, times in runs) for runs in (D, D_PRIME)]
print(f"{len(a)} noise call(s) on D ({rows[0]} rows), {len(b)} on D' ({rows[1]} rows)")
for number, (x, y) in enumerate(zip(a, b), start=1):
    if x != y:
        print(f"first difference at call #{number}: {x!r} on D, {y!r} on D'")
        break
if a != b:
    print("BUG: the noise calls' transcript differs between neighbouring tables")
    sys.exit(1)
print("not reproduced")
