"""Reproduces a dpwitness audit finding: ε_lb = 7.716 > ε = 1
at 95% confidence (certified on the audit's event (-0.184·X[0] + 0.00405·X[1]) > -16.7509).

Samples the function on D and D' with the library alone (and polars, numpy), counts the runs in
EVENT on each and compares the ratio of the rates with e^ε: exit status 1 when the bug shows.
EVENT is one a script states alone, chosen by the check on the same pair."""
import math
import sys

import numpy as np
import polars as pl

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
for _part in 'diffprivlib_histogram_weights'.split("."):
    fn = getattr(fn, _part)

def table(runs):
    # runs of identical rows: (row, how many times), in order
    index = np.repeat(np.arange(len(runs)), [times for _, times in runs])
    schema = {'x': pl.Float64, 'w': pl.Int64}
    return pl.DataFrame(
        {name: pl.Series(name, [row[i] for row, _ in runs], dtype=schema[name], strict=False).gather(index)
         for i, name in enumerate(schema)}
    )

def plain(output):
    """An output with numpy's types made Python's, a dict's keys in order and a frame as its columns."""
    if hasattr(output, "columns") and len(getattr(output, "shape", ())) == 2 and not isinstance(output, np.ndarray):
        return {str(name): plain(list(output[name])) for name in sorted(output.columns, key=repr)}
    if isinstance(output, dict):
        return {key: plain(output[key]) for key in sorted(output, key=repr)}
    if isinstance(output, np.ndarray):
        return plain(output.tolist())
    if isinstance(output, (list, tuple)):
        return tuple(plain(item) for item in output)
    if isinstance(output, np.generic):
        return output.item()
    if isinstance(output, bytearray):
        return bytes(output)
    return output


def shape_of(value):
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key!r}: {shape_of(item)}" for key, item in value.items()) + "}"
    if isinstance(value, tuple):
        return "(" + ", ".join(shape_of(item) for item in value) + ")"
    if isinstance(value, bytes):
        return f"bytes[{len(value)}]"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def coordinates(value):
    if isinstance(value, dict):
        return [c for item in value.values() for c in coordinates(item)]
    if isinstance(value, tuple):
        return [c for item in value for c in coordinates(item)]
    if isinstance(value, (bool, int, float)):
        return [float(value)]
    if isinstance(value, bytes):  # a bit vector: its bits, little-endian within each byte
        return [float(byte >> k & 1) for byte in value for k in range(8)]
    return [math.nan]


def in_event(output, event):
    value = plain(output)
    if event[0] == "shape":
        return shape_of(value) in event[1]
    if event[0] == "value":
        return repr(value) in event[1]
    numbers = coordinates(value)
    x = numbers[event[1]] if event[1] < len(numbers) else math.nan
    return bool(x > event[2]) if event[0] == "above" else bool(x <= event[2])  # NaN: in neither

D = []
D_PRIME = [((0.25, 100,), 1)]
EPSILON = 1.0
DELTA = 0.0

EVENT = ('value', ['(100, 0)', '(99, 0)', '(101, 0)', '(100, 1)', '(102, 0)', '(98, 0)', '(101, 1)', '(100, 2)', '(99, 1)', '(103, 0)', '(97, 0)', '(102, 1)', '(101, 2)', '(99, 2)', '(98, 1)', '(100, 3)', '(104, 0)', '(96, 0)', '(100, 5)', '(104, 1)', '(97, 2)', '(103, 1)', '(105, 0)', '(103, 2)', '(101, 3)', '(97, 1)', '(100, 4)', '(102, 2)', '(96, 2)', '(98, 2)', '(99, 3)', '(98, 3)', '(102, 3)', '(103, 3)', '(95, 0)', '(97, 3)', '(100, 6)', '(101, 4)', '(96, 1)', '(94, 1)', '(97, 4)'])
FAVOURS = "D'"  # the table on which EVENT is likelier
SAMPLES = 50000  # runs per table: enough to see EVENT on the other table
# when chosen: 0 runs of 1000 in EVENT on D, 1000 on D'


def hits(runs):
    frame = table(runs)
    return sum(in_event(fn(frame), EVENT) for _ in range(SAMPLES))


on_d, on_d_prime = hits(D), hits(D_PRIME)
likelier, other = (on_d, on_d_prime) if FAVOURS == "D" else (on_d_prime, on_d)
ratio = likelier / other if other else (math.inf if likelier else 1.0)
print(f"EVENT {EVENT!r}: {on_d} of {SAMPLES} runs on D, {on_d_prime} of {SAMPLES} on D'")
print(f"rate ratio (on {FAVOURS} over the other) {ratio:.4g} vs e^ε = {math.exp(EPSILON):.4g}")
gap = (likelier - math.exp(EPSILON) * other) / SAMPLES  # above δ: the (ε, δ) claim fails on EVENT
if DELTA:
    print(f"rate gap (the favoured rate minus e^ε times the other) {gap:.4g} vs δ = {DELTA:.4g}")
if gap > DELTA:
    print(
        "BUG: the event's rate on one table exceeds e^ε times its rate on the neighbour by more than δ"
        if DELTA
        else "BUG: the event is more than e^ε times likelier on one table than on its neighbour"
    )
    sys.exit(1)
print("not reproduced")
