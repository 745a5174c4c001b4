"""Events that separate two output distributions, and the search for the best one.

An event E is a yes/no question about one output (``X > t``, ``a < X ≤ b``, ``X ∈ S``,
``w·x > t``…). The auditor picks, on one set of samples, the event whose *projected* ε lower
bound at the measurement sample size is largest (so it prefers a likely event with a ratio
of e^ε to a rare one with the same ratio: that is what makes the bound tight), then measures
it on fresh samples. Families:

* ``threshold``: ``X_j > t`` / ``X_j ≤ t`` on each coordinate, swept over quantiles;
* ``intervals``: ``a < X_j ≤ b`` for windows of many widths (1, 2, 4, … bins of a fine
  adaptive histogram of both inputs' outputs): a leak into a narrow window shows here;
* ``values``: value sets for discrete coordinates, values ordered by their likelihood ratio
  and every prefix tried (the Neyman–Pearson family); ``joint values`` the same on whole rows;
* ``point masses``: the same on the values that repeat exactly in an otherwise continuous
  coordinate (or row): an output that returns its input on 1% of runs shows here;
* ``projection``: a logistic-regression score (a density-ratio estimate, as in DP-Sniper)
  thresholded like a scalar;
* ``sums and differences``: the usual projections of a vector — the sum (equivalently the
  mean), the number of coordinates above their pooled median, the largest and the smallest
  coordinate, differences of coordinates;
* ``ties``: equalities between the coordinates of a vector — the number of distinct values in
  the row, the size of its largest group of equal values, and ``X_i = X_j`` for pairs of
  coordinates (a library that copies one noisy value to several keys shows here: continuous
  noise makes two coordinates equal with probability 0); searched with the sums and
  differences, whose power statement covers both;
* in the tight mode, ``binned rows``: value sets on whole rows whose continuous columns are cut
  into a few pooled-quantile bins (a histogram estimate of the log density ratio, thresholded);
* in the tight mode, for nested outputs whose parts vary in length (a tuple of two sparse
  vectors' answers), every family again on *aligned* rows (:class:`Alignment`: each value keeps one
  column whatever the shape), ``joint values`` and ``binned rows`` on each top-level part alone,
  and ``parts combined``: a threshold on the sum of the parts' log likelihood ratios, each
  estimated on a histogram of the part (parts that draw their own noise multiply their ratios);
* in floating-point mode, ``bit pattern``: value sets on the bit pattern of each output;
* in the tight mode, on paired runs (common random numbers), ``paired thresholds``: thresholds
  on each coordinate, on the vector summaries and on the *coupled shift* w·x (w the mean of
  x − x' over pairs: coordinates that the pairing leaves equal get weight 0), each threshold
  scored by the paired bound (:func:`dpwitness.witness.stats.paired_projection`).

Missing values (NaN: a position that a shorter structured output does not have, or a NaN the
mechanism returned, which the row's shape code tells apart) belong to no threshold, interval or
projection event; they are a value of their own for the value sets. ±∞ are ordinary values
(the largest and the smallest); the projection reads them as 0.

The package by job: :mod:`~dpwitness.witness.events.model` (features, events, alignment, the
scorer), :mod:`~dpwitness.witness.events.scalar` (thresholds, intervals, value sets, point masses,
binned rows), :mod:`~dpwitness.witness.events.vector` (projections, sums and differences, ties),
:mod:`~dpwitness.witness.events.search` (the search over every family),
:mod:`~dpwitness.witness.events.paired` (paired thresholds) and
:mod:`~dpwitness.witness.events.aligned` (nested outputs).
"""

from dpwitness.witness.events.aligned import aligned_candidates
from dpwitness.witness.events.model import (
    Alignment,
    Candidate,
    Event,
    Feature,
    PartScore,
    Path,
    Scorer,
    binned,
    lowest_bit,
    names_of,
    precision_bits,
)
from dpwitness.witness.events.paired import paired_candidates
from dpwitness.witness.events.scalar import threshold_candidate
from dpwitness.witness.events.search import resolution, search
from dpwitness.witness.events.vector import summary_features

__all__ = [
    "Alignment",
    "Candidate",
    "Event",
    "Feature",
    "PartScore",
    "Path",
    "Scorer",
    "aligned_candidates",
    "binned",
    "lowest_bit",
    "names_of",
    "paired_candidates",
    "precision_bits",
    "resolution",
    "search",
    "summary_features",
    "threshold_candidate",
]
