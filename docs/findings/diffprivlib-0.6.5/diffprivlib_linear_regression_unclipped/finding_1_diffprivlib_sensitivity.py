"""Reproduces a dpwitness finding: diffprivlib 0.6.5, LaplaceFolded at diffprivlib/models/linear_regression.py:122.

The value this noise call receives moves by more than the Δ = 10000.0 it declares.
Needs only the library (and polars, numpy). Exit status 1 when the bug shows."""
import math
import sys

import numpy as np
import polars as pl

import sys
from diffprivlib.mechanisms.base import DPMachine

CALLS = []


def _unnoised(cls):
    def randomise(mech, value=None, *args, **kwargs):
        frame = sys._getframe(1)
        site = f"{frame.f_code.co_filename}:{frame.f_lineno}"
        CALLS.append((site, type(mech).__name__, getattr(mech, "sensitivity", None), value))
        return value
    return randomise


_stack = [DPMachine]
while _stack:
    _cls = _stack.pop()
    _stack.extend(_cls.__subclasses__())
    if "randomise" in vars(_cls):
        _cls.randomise = _unnoised(_cls)

import importlib
import os
import types

# the checked module, as it was checked (used when it is not importable here)
_SOURCE = '"""The findings table\'s catalogue (issue 28 item 6): release functions written as each library\'s docs show them.\n\nEach function takes a Polars table and returns the library\'s release, nothing else (as in\ncheck_cases.py, whose functions are reused here where the same call works across releases).\n:data:`CATALOGUE` says, per function: its library, the ``--columns`` JSON, the claimed ε, the\nreleases it applies to, the verdict expected per range of releases and, for a known bug, its\npublic reference with the releases that have it and those that fixed it (or, when no release\nfixed it, the correct usage that serves as its control). bench/anchors/findings.py runs\n``dpwitness check`` on every (release venv, entry) that applies and writes docs/findings.md.\n\nRun one by hand in a release\'s venv:\n``.venv-versions/opendp-0.14.2/bin/dpwitness check bench/anchors/findings_catalogue.py:opendp_rr_bitvec\n--columns \'{"question": [0, 7]}\' --epsilon 0.8109302162163288``.\n"""\n\nfrom __future__ import annotations\n\nimport contextlib\nimport importlib\nimport re\nfrom dataclasses import dataclass, field\nfrom typing import Any\n\nimport polars as pl\n\n# The functions that work across releases are check_cases.py\'s, re-exported here so that the check loads\n# them from this module (``findings_catalogue.py:NAME``); a relocated reproduction script that embeds\n# this module\'s source has no check_cases beside it and needs none of them.\nwith contextlib.suppress(ImportError):\n    from check_cases import (  # noqa: F401\n        diffprivlib_geometric,\n        diffprivlib_laplace,\n        diffprivlib_linear_regression,\n        opendp_geometric,\n        opendp_laplace,\n        pipelinedp_sum,\n        pydp_bounded_sum,\n        pydp_count,\n        smartnoise_sum,\n    )\n\n# Each library imported at the top of the module, as their docs import them, where it is installed (a\n# release venv holds one library; an import that fails is left out). dpwitness installs the adapters of\n# the libraries imported when the check starts, and of those the function imports on its first run only\n# when that run saw no noise call: diffprivlib 0.6.0-0.6.5 with scikit-learn 1.6 import scipy.stats on\n# their first run, whose import draws from NumPy\'s generators (seen as noise calls), so an import inside\n# the function left diffprivlib unhooked (docs/findings.md, "Tool faults met").\nfor _module in ("diffprivlib.mechanisms", "diffprivlib.tools", "diffprivlib.models", "opendp.prelude", "pydp", "pipeline_dp"):\n    with contextlib.suppress(Exception):\n        importlib.import_module(_module)\n\n#: The verdicts an entry may expect: "violated" (a finding), "ok" (no finding, the audit says ok),\n#: "not violated" (ok or an honest inconclusive: no finding).\nVERDICTS = ("violated", "ok", "not violated")\n#: What an entry is: a published bug (public reference), a bug known here without a public report,\n#: a new finding of this table, or a control (a correct usage, no finding expected).\nKINDS = ("published", "unpublished", "new", "control")\n\n\ndef version_key(version: str) -> tuple[int, ...]:\n    """``"0.6.10"`` → ``(0, 6, 10)``."""\n    return tuple(int(part) for part in re.findall(r"\\d+", version))\n\n\n@dataclass(frozen=True)\nclass Range:\n    """Releases ``low ≤ v < high`` (``high`` empty: no upper end)."""\n\n    low: str\n    high: str = ""\n\n    def __contains__(self, version: object) -> bool:\n        if not isinstance(version, str):\n            return False\n        key = version_key(version)\n        return key >= version_key(self.low) and (not self.high or key < version_key(self.high))\n\n    def __str__(self) -> str:\n        return f"≥ {self.low}" + (f", < {self.high}" if self.high else "")\n\n\n@dataclass(frozen=True)\nclass Entry:\n    """One catalogue function and what the table expects of it."""\n\n    name: str\n    library: str\n    columns: str\n    what: str\n    kind: str\n    applies: Range\n    #: (releases, expected verdict), the ranges disjoint and covering ``applies``.\n    expected: tuple[tuple[Range, str], ...]\n    epsilon: float = 1.0\n    #: The public reference (an issue, PR or paper URL) of a published bug; "" otherwise.\n    reference: str = ""\n    #: The releases that have the bug, and those that fixed it (None: no release fixed it yet).\n    buggy: Range | None = None\n    fixed: Range | None = None\n    #: The catalogue entry that is the correct usage of the same call (a control), when no release fixed the bug.\n    control: str = ""\n    #: The check\'s CPU budget (--max-seconds) and any other flags.\n    max_seconds: float = 30.0\n    flags: tuple[str, ...] = field(default_factory=tuple)\n    note: str = ""\n    #: Why the check can miss it (shown beside a miss in docs/findings.md); "" when nothing is known.\n    miss: str = ""\n\n    def expected_for(self, version: str) -> str | None:\n        """The verdict expected on ``version`` (None: the entry does not apply to it)."""\n        if version not in self.applies:\n            return None\n        return next((verdict for releases, verdict in self.expected if version in releases), None)\n\n\n# --- diffprivlib -------------------------------------------------------------------------------\n\n\ndef diffprivlib_histogram_weights(table: pl.DataFrame) -> Any:\n    """tools.histogram with a weight per record, as numpy.histogram takes them (the docs\' ``weights``)."""\n    from diffprivlib import tools\n\n    counts, _ = tools.histogram(table["x"].to_numpy(), epsilon=1.0, bins=2, range=(0, 1), weights=table["w"].to_numpy())\n    return counts\n\n\ndef diffprivlib_histogram(table: pl.DataFrame) -> Any:\n    """tools.histogram without weights (its control: one record moves one bin by 1)."""\n    from diffprivlib import tools\n\n    counts, _ = tools.histogram(table["x"].to_numpy(), epsilon=1.0, bins=2, range=(0, 1))\n    return counts\n\n\ndef diffprivlib_linear_regression_symmetric(table: pl.DataFrame) -> Any:\n    """LinearRegression with bounds symmetric about 0 and values inside them: #105\'s lower-bound-only\n    sensitivity is then right (the control of #105)."""\n    from diffprivlib.models import LinearRegression\n\n    model = LinearRegression(bounds_X=(-100, 100), bounds_y=(-100, 100), fit_intercept=False, epsilon=1.0)\n    return model.fit(table.select("x").to_numpy(), table["y"].to_numpy()).coef_\n\n\ndef diffprivlib_linear_regression_unclipped(table: pl.DataFrame) -> Any:\n    """The same model on values that may lie outside the declared bounds (the bounds are a promise\n    diffprivlib keeps by clipping; with fit_intercept=False it never clips)."""\n    from diffprivlib.models import LinearRegression\n\n    model = LinearRegression(bounds_X=(-100, 100), bounds_y=(-100, 100), fit_intercept=False, epsilon=1.0)\n    return model.fit(table.select("x").to_numpy(), table["y"].to_numpy()).coef_\n\n\n# --- OpenDP ------------------------------------------------------------------------------------\n\n#: ε of the bit-vector randomized response below: 2·m·ln((2 − f)/f) with m = 1, f = 0.8.\nRR_BITVEC_EPSILON = 0.8109302162163288\n#: ε of the categorical randomized response below: ln(p/(1 − p)) with p = 0.75.\nRR_EPSILON = 1.0986122886681098\n\n\ndef opendp_rr_bitvec(table: pl.DataFrame) -> Any:\n    """One respondent\'s ticked option among 8 as a bit vector (one byte), through OpenDP\'s bit-vector\n    randomized response as its user guide shows it (``np.packbits(…, bitorder="little")``)."""\n    import numpy as np\n    import opendp.prelude as dp\n\n    dp.enable_features("contrib")\n    m_rr = dp.m.make_randomized_response_bitvec(dp.bitvector_domain(max_weight=1), dp.discrete_distance(), f=0.8)\n    ticked = np.zeros(8, dtype=np.uint8)\n    for question in table["question"].to_list():\n        ticked[question] = 1\n    return m_rr(np.packbits(ticked, bitorder="little").tobytes())\n\n\ndef opendp_rr_bitvec_last_option(table: pl.DataFrame) -> Any:\n    """The same release, checked with a column that lets the respondent tick only the last option: every\n    pair of neighbours then differs in the last bit, the one #2708 left unrandomized."""\n    return opendp_rr_bitvec(table)\n\n\ndef opendp_rr_categorical(table: pl.DataFrame) -> Any:\n    """One respondent\'s yes/no answer through OpenDP\'s categorical randomized response (the user guide\'s\n    ``make_randomized_response(categories, prob=0.75)``); the table holds the answers given."""\n    import opendp.prelude as dp\n\n    dp.enable_features("contrib")\n    rr = dp.m.make_randomized_response(["yes", "no"], prob=0.75)\n    return rr("yes" if "yes" in table["answer"].to_list() else "no")\n\n\n# --- the catalogue -----------------------------------------------------------------------------\n\n_ALL = Range("0")\n_DIFFPRIVLIB_LR = "https://github.com/IBM/differential-privacy-library/blob/0.6.6/diffprivlib/models/linear_regression.py"\n\nCATALOGUE: tuple[Entry, ...] = (\n    Entry(\n        "diffprivlib_laplace",\n        "diffprivlib",\n        \'{"x": [0.0, 1.0]}\',\n        "mechanisms.Laplace on a float sum at 0 vs 1: the porous float support (precision-based attacks)",\n        "published",\n        _ALL,\n        ((_ALL, "violated"),),\n        reference="https://arxiv.org/abs/2207.13793",\n        buggy=_ALL,\n        control="diffprivlib_geometric",\n        note="Haney et al. 2022 (and Mironov 2012) for floating-point Laplace samplers; no diffprivlib release "\n        "samples its float Laplace on a grid.",\n    ),\n    Entry(\n        "diffprivlib_geometric",\n        "diffprivlib",\n        \'{"x": [0, 1]}\',\n        "mechanisms.Geometric on a count",\n        "control",\n        _ALL,\n        ((_ALL, "ok"),),\n    ),\n    Entry(\n        "diffprivlib_histogram_weights",\n        "diffprivlib",\n        \'{"x": [0.25, 0.75], "w": [0, 100]}\',\n        "tools.histogram(weights=…): noised with sensitivity 1 whatever the weights",\n        "unpublished",\n        _ALL,\n        ((_ALL, "violated"),),\n        control="diffprivlib_histogram",\n        note="dpwitness\'s REFERENCES.md (\'Bugs found in the anchors\'); no public report found.",\n    ),\n    Entry(\n        "diffprivlib_histogram",\n        "diffprivlib",\n        \'{"x": [0.25, 0.75]}\',\n        "tools.histogram without weights",\n        "control",\n        _ALL,\n        ((_ALL, "not violated"),),\n    ),\n    Entry(\n        "diffprivlib_linear_regression",\n        "diffprivlib",\n        \'{"x": [0.0, 50.0, 100.0], "y": [0.0, 100.0]}\',\n        "LinearRegression, bounds (0, 100): the X² term noised with sensitivity lower² = 0 (#105)",\n        "published",\n        _ALL,\n        ((_ALL, "violated"),),\n        reference="https://github.com/IBM/differential-privacy-library/issues/105",\n        buggy=_ALL,\n        control="diffprivlib_linear_regression_symmetric",\n        note="Fix proposed in PR #110 (open); no release has it (0.6.6 is the latest on PyPI).",\n    ),\n    Entry(\n        "diffprivlib_linear_regression_symmetric",\n        "diffprivlib",\n        \'{"x": [-100.0, 0.0, 50.0, 100.0], "y": [-100.0, 0.0, 100.0]}\',\n        "LinearRegression, bounds (−100, 100), values inside them",\n        "control",\n        _ALL,\n        ((_ALL, "not violated"),),\n    ),\n    Entry(\n        "diffprivlib_linear_regression_unclipped",\n        "diffprivlib",\n        \'{"x": "Float64", "y": "Float64"}\',\n        "LinearRegression(fit_intercept=False), bounds (−100, 100): X and y never clipped",\n        "new",\n        _ALL,\n        ((_ALL, "violated"),),\n        reference=_DIFFPRIVLIB_LR,\n        buggy=_ALL,\n        control="diffprivlib_linear_regression_symmetric",\n        note="New here (see the write-up below): the clipping sits in the fit_intercept branch of _preprocess_data.",\n    ),\n    # OpenDP\n    Entry(\n        "opendp_laplace",\n        "opendp",\n        \'{"x": [0.0, 0.5, 1.0]}\',\n        "make_sum >> then_laplace on a bounded float sum",\n        "control",\n        _ALL,\n        ((_ALL, "ok"),),\n        max_seconds=100.0,\n        note="100 s of CPU, as in the public cases: with 30 s the audit stopped before its 80,000-run round on "\n        "0.14.2, 0.15.1 and 0.16.0 (inconclusive, ε_lb 0.92, 0.91 and 0.90).",\n    ),\n    Entry("opendp_geometric", "opendp", \'{"x": [0, 1, 2]}\', "make_count >> make_geometric", "control", _ALL, ((_ALL, "ok"),)),\n    Entry(\n        "opendp_rr_bitvec",\n        "opendp",\n        \'{"question": [0, 7]}\',\n        "make_randomized_response_bitvec: the last bit never randomized (#2708)",\n        "published",\n        _ALL,\n        ((Range("0", "0.15.0"), "violated"), (Range("0.15.0"), "not violated")),\n        epsilon=RR_BITVEC_EPSILON,\n        reference="https://github.com/opendp/opendp/pull/2708",\n        buggy=Range("0", "0.15.0"),\n        fixed=Range("0.15.0"),\n        note="CHANGELOG 0.15.0: \'Randomized response bitvec randomization was off-by-one [#2708]\'.",\n        miss="Every pair of inputs is at discrete distance 1, so the search has no shift to rank pairs by, and the "\n        "audit (one pair) can take a pair that differs in bit 0 only; its loss is then ln 1.5 ≈ 0.405, one randomized "\n        "bit at f = 0.8, what a correct release gives. The next entry gives the check neighbours that differ in the "\n        "last option.",\n    ),\n    Entry(\n        "opendp_rr_bitvec_last_option",\n        "opendp",\n        \'{"question": [7]}\',\n        "the same, neighbours that differ in the last option only (the pair #2708 needs)",\n        "published",\n        _ALL,\n        ((Range("0", "0.15.0"), "violated"), (Range("0.15.0"), "not violated")),\n        epsilon=RR_BITVEC_EPSILON,\n        reference="https://github.com/opendp/opendp/pull/2708",\n        buggy=Range("0", "0.15.0"),\n        fixed=Range("0.15.0"),\n        note="With options 0 and 7 (the row above) the check may audit a pair that differs in bit 0 only.",\n    ),\n    Entry(\n        "opendp_rr_categorical",\n        "opendp",\n        \'{"answer": ["yes", "no"]}\',\n        "make_randomized_response over two listed answers",\n        "control",\n        _ALL,\n        ((_ALL, "not violated"),),\n        epsilon=RR_EPSILON,\n    ),\n    # python-dp\n    Entry(\n        "pydp_bounded_sum",\n        "python-dp",\n        \'{"x": "Float64"}\',\n        "BoundedSum(dtype=\'float\') on [0, 1]: the float sum\'s rounding moves it by more than 1",\n        "published",\n        _ALL,\n        ((_ALL, "violated"),),\n        reference="https://arxiv.org/abs/2207.10635",\n        max_seconds=60.0,\n        buggy=_ALL,\n        control="pydp_count",\n        note="Casacuberta, Shoemate, Vadhan, Wagaman, CCS 2022; no python-dp release accounts for float rounding.",\n    ),\n    Entry("pydp_count", "python-dp", \'{"x": "Int64"}\', "Count(dtype=\'int\')", "control", _ALL, ((_ALL, "ok"),)),\n    # PipelineDP, SmartNoise SQL\n    Entry(\n        "pipelinedp_sum",\n        "pipeline-dp",\n        \'{"x": "Float64"}\',\n        "sum per public partition: one NaN value makes the release NaN",\n        "unpublished",\n        _ALL,\n        ((_ALL, "violated"),),\n        note="Found by dpwitness check (docs/targets.md, the public cases); no public report found.",\n    ),\n    Entry(\n        "smartnoise_sum",\n        "smartnoise-sql",\n        \'{"x": [0.0, 0.5, 1.0]}\',\n        "SELECT SUM(x) on a float column declared in [0, 1]",\n        "control",\n        _ALL,\n        ((_ALL, "not violated"),),\n    ),\n)\n\nBY_NAME: dict[str, Entry] = {entry.name: entry for entry in CATALOGUE}\n\n\ndef check_target(entry: Entry) -> str:\n    """The module file the check loads the function from (this file: it imports check_cases\' functions)."""\n    return f"findings_catalogue.py:{entry.name}"\n'
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
for _part in 'diffprivlib_linear_regression_unclipped'.split("."):
    fn = getattr(fn, _part)

def table(runs):
    # runs of identical rows: (row, how many times), in order
    index = np.repeat(np.arange(len(runs)), [times for _, times in runs])
    schema = {'x': pl.Float64, 'y': pl.Float64}
    return pl.DataFrame(
        {name: pl.Series(name, [row[i] for row, _ in runs], dtype=schema[name], strict=False).gather(index)
         for i, name in enumerate(schema)}
    )

D = [((0.0, 0.0,), 1)]
D_PRIME = [((0.0, 0.0,), 1), ((0.0, 1.7976931348623157e+308,), 1)]
DECLARED = 10000.0
CALL = 0
NORM = 'l1'


def before_noise(runs):
    CALLS.clear()
    globals().get("PIN", lambda: None)()  # the library's own randomness, pinned (if it has any)
    fn(table(runs))
    site, mechanism, _, value = CALLS[CALL]
    return site, mechanism, value


def numbers(value):
    # the value's numbers by position (bytes: their bits; a dict: by key; a frame: its
    # columns of numbers, by name); None: not numbers
    if hasattr(value, "columns") and len(getattr(value, "shape", ())) == 2:
        columns = {str(name): numbers(list(value[name])) for name in value.columns}
        return {(name, *k): v for name, inner in columns.items() if inner is not None for k, v in inner.items()}
    if isinstance(value, (bytes, bytearray)):
        bits = np.unpackbits(np.frombuffer(bytes(value), dtype=np.uint8))
        return {(i,): float(b) for i, b in enumerate(bits)}
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            inner = numbers(item)
            if inner is None:
                return None
            out.update({(key, *k): v for k, v in inner.items()})
        return out
    try:
        flat = np.asarray(value, dtype=float).ravel()
    except (TypeError, ValueError):
        return None
    return {(i,): float(v) for i, v in enumerate(flat)}


def shift(a, b):
    x, y = (None, None) if NORM == "discrete" else (numbers(a), numbers(b))
    if x is None or y is None:  # the discrete metric: 0 when equal, 1 otherwise
        return 0.0 if a == b or repr(a) == repr(b) else 1.0
    gaps = []
    for key in x.keys() | y.keys():
        u, v = x.get(key, 0.0), y.get(key, 0.0)
        same = u == v or (math.isnan(u) and math.isnan(v))
        gaps.append(0.0 if same else math.inf if math.isnan(u) or math.isnan(v) else abs(u - v))
    return math.hypot(*gaps) if NORM == "l2" else math.fsum(gaps)


site, mechanism, a = before_noise(D)
_, _, b = before_noise(D_PRIME)
moved = shift(a, b)
print(f"{mechanism} at {site}: value before noise {a!r} on D, {b!r} on D'")
print(f"{NORM} shift {moved!r} vs declared sensitivity {DECLARED!r}")
if moved > DECLARED * (1 + 1e-09):
    print("BUG: the shift exceeds the declared sensitivity")
    sys.exit(1)
print("not reproduced")
