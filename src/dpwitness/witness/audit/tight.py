"""The tight mode: after the fast verdict, spend the rest of the CPU budget on proposing, selecting and
certifying a few events, to maximise the certified ε lower bound."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from dpwitness.witness.audit.decide import agree_with_bounds
from dpwitness.witness.audit.encode import FloatArray, pad
from dpwitness.witness.audit.result import AuditResult
from dpwitness.witness.audit.sample import OutOfTime, Sampler
from dpwitness.witness.events import Scorer, aligned_candidates, paired_candidates, search, summary_features, threshold_candidate
from dpwitness.witness.stats import epsilon_lower_bound, paired_epsilon_lower_bound, paired_projection

#: Most numbers kept per input for the tight mode's search sample (memory bound).
TIGHT_STORE = 10_000_000
#: Rows per chunk of the tight mode's final measurement (counted, then dropped).
TIGHT_CHUNK = 1_000_000
#: The least search time per row (and input) the tight mode plans with: a search measured on a small
#: sample underestimates the cost of sorting millions of rows.
TIGHT_SEARCH_ROW_SECONDS = 3e-6
#: Shares of the tight mode's time: search sample, selection sample (the rest: final measurement).
TIGHT_SEARCH_SHARE, TIGHT_SELECT_SHARE = 0.2, 0.2
#: Least share of the tight mode's time for the fresh (paired) search sample of a per-call mechanism.
TIGHT_PAIRED_SHARE = 0.1
#: Share of the tight mode's time for the streamed vector summaries (sum, count above median, max,
#: min); half of it for paired runs, whose search already scores the summaries on the pairs.
TIGHT_SUMMARIES_SHARE = 0.1
#: Events certified together on the tight mode's final sample for vector outputs (the best two
#: proposals: a hedge against a noisy choice, at the price of a Bonferroni factor of 2).
TIGHT_EVENTS = 2
#: A best vector proposal ranked by its paired counts is certified alone (their noise is that of the
#: few discordant pairs, so its rank is rarely wrong), unless the best other event's projected
#: bound is within this fraction of its own: then the selection could not tell them apart (RAPPOR's
#: coupled shift and a fitted projection of its 20 bits: 0.2843 against 0.2845 on 1.4·10⁶ pairs),
#: and both are certified together.
TIGHT_TIE = 0.01
#: A per-call mechanism's run time may depend on its outputs, so the clock must not choose where its
#: tight measurement stops: it is planned with this share of the time left and certified at the
#: last of the sizes fixed in advance (``PER_CALL_CHECKPOINTS``, fractions of the plan) that it
#: reached, each with its own share of α (``PER_CALL_CHECKPOINT_ALPHA``, fixed in advance: Bonferroni).
PER_CALL_FINAL_SHARE = 0.9
PER_CALL_CHECKPOINTS = (0.5, 0.7, 0.85, 1.0)
PER_CALL_CHECKPOINT_ALPHA = (0.02, 0.04, 0.09, 0.85)
#: The tight search only proposes events (a fresh sample chooses among them): it shrinks its
#: estimates by about one standard deviation, not 2.3, so that weak but real effects survive.
TIGHT_SHRINK = 0.16
#: The selection among the tight proposals shrinks its fresh estimates by about 1.6 standard
#: deviations: enough that a rare proposal that got lucky does not win, not so much that a rare
#: but truly better event (the optimum of a sparse vector) always loses to a likely weak one.
TIGHT_SELECT_SHRINK = 0.05
#: Families whose tight proposals are ranked on their search and selection counts pooled: value
#: sets chosen among few keys. Not binned rows: their search ordered thousands of cells by noisy
#: ratios, so their search counts are biased upwards (SVT34Parallel's selection chose one that
#: certified 0.005 over an aligned part's pattern that certifies 0.27).
POOLED_FAMILIES = frozenset({"values", "joint values"})
#: A tight mode planned in runs (``final_samples``): its search sample, a per-call mechanism's least
#: fresh paired search sample, its streamed vector summaries and its selection sample, each as a
#: share of the final sample's runs per input (about the shares the CPU plan gives at ~5 µs per run).
SAMPLED_SHARES = {"search": 0.25, "paired": 0.1, "summaries": 0.1, "selection": 0.2}


# --- tight mode ------------------------------------------------------------------------------


def certified_together(unpaired: FloatArray, paired: FloatArray, cells: FloatArray, *, vector: bool) -> list[int]:
    """The proposals the final sample certifies (Bonferroni over them), best first.

    ``unpaired`` and ``paired`` are each proposal's projected bounds from the selection sample,
    ``cells`` its paired counts there (E under both inputs, under the first only, under the second
    only); ``vector``: the outputs are vectors. Vectors bring proposals of very different kinds
    whose ranking is noisy: the best two are certified together. A best proposal ranked by its
    paired counts (whose noise is that of the few discordant pairs) is certified alone unless the
    next is within :data:`TIGHT_TIE` of it; other outputs: the best one alone. The runner-up is
    the best proposal that is another event on the selection sample: many descriptions name one
    event (SVT's "X[5] > 0" and "shape ∈ {7}").
    """
    scores = np.maximum(unpaired, paired)
    ranked = np.argsort(-scores, kind="stable")
    top = int(ranked[0])
    others = [int(i) for i in ranked[1:] if not np.array_equal(cells[i], cells[top])]
    tied = bool(others) and scores[others[0]] >= (1.0 - TIGHT_TIE) * scores[top] > 0
    together = vector and (unpaired[top] >= paired[top] or tied)
    return [top, *others][: TIGHT_EVENTS if together else 1]


def _stream(
    sampler: Sampler,
    d: Any,
    d_prime: Any,
    seeds: np.random.SeedSequence,
    n: int,
    structured: bool,
    use: Callable[[FloatArray, FloatArray], None],
    *,
    until: float = math.inf,
    width: int = 1,
    chunk: int = 0,
    fixed: bool = False,
) -> int:
    """Draw n runs per input in chunks (fresh streams each; the rows of a chunk are paired runs,
    see :meth:`Sampler.draw_pairs`), hand each pair of chunks to ``use``; stop early, at a chunk
    boundary, once the sampler's CPU clock passes ``until`` (or the wall-clock cap), or with
    ``fixed`` (a sample whose size no clock may choose) raise :class:`OutOfTime` there. Returns the runs drawn."""
    done = 0
    while done < n:
        if sampler.out_of_time(until):
            if fixed:
                raise OutOfTime
            break
        size = min(chunk or TIGHT_CHUNK, max(1000, TIGHT_STORE // (2 * width)), n - done)
        ra, rb = sampler.draw_pairs(d, d_prime, seeds.spawn(1)[0], size)
        (ra, rb), _, _ = sampler.view(ra, rb, structured=structured)
        use(ra, rb)
        done += size
    return done


def tighten(
    sampler: Sampler,
    d: Any,
    d_prime: Any,
    kept_a: FloatArray,
    kept_b: FloatArray,
    fast: AuditResult,
    *,
    root: np.random.SeedSequence,
    deadline: float,
    wall_started: float,
    cpu_started: float,
    alpha: float,
    delta: float,
    float_test: bool,
    rng: np.random.Generator,
    final_samples: int | None = None,
) -> AuditResult:
    """Spend the rest of the time budget on a few events: proposed by a search on a large sample
    (for vectors, also on the sum, count-above-median, max and min of a larger streamed sample),
    ranked on a fresh selection sample, then the best one (the best ``TIGHT_EVENTS`` for vectors)
    certified (Bonferroni over them only) on a final sample. The fast phase's samples are reused for the
    search only; the row layout (with or without shape columns) is frozen once the search starts.
    ``deadline`` is an instant of the sampler's CPU clock; every time below is CPU time.

    :param sampler: the fast phase's sampler (its rates plan the samples); ``d`` and ``d_prime`` the inputs.
    :param kept_a: the fast phase's rows of ``d``; ``kept_b`` those of ``d_prime`` (search only).
    :param fast: the fast phase's result, returned with the tight fields set.
    :param root: the audit's SeedSequence (the tight samples' streams are spawned from it).
    :param wall_started: the audit's start, on :func:`time.perf_counter`; ``cpu_started`` on the sampler's clock.
    :param alpha: the tight phase's share of 1 − confidence; ``delta`` the claimed δ.
    :param float_test: search the bit-pattern families too; ``rng`` drives the event search.
    :param final_samples: the final sample's runs per input, every other sample a fixed share of it
        (``SAMPLED_SHARES``): no clock decides a size, so one seed gives one result at any load, and
        ``deadline`` only stops runaway work (no tight bound is then claimed). None: planned in CPU time.
    """
    started, wall_begun = sampler.clock(), time.perf_counter()
    seeds = root.spawn(1)[0].spawn(4)
    draw_rate = max(sampler.recent_seconds_per_run, 1e-9)  # seconds per run per input
    search_rate = max(sampler.search_seconds_per_row, TIGHT_SEARCH_ROW_SECONDS)  # search seconds per row of each input
    total = deadline - started
    width = kept_a.shape[1]
    cap = max(10_000, TIGHT_STORE // max(width, 1))
    structured = sampler.encoder.structured
    in_runs = final_samples is not None

    def runs(share: str, seconds_share: float, seconds_per_run: float) -> int:
        """A sample's runs per input: its share of ``final_samples``, or of the CPU time at the rate given."""
        if final_samples is not None:
            return int(final_samples * SAMPLED_SHARES[share])
        return int(total * seconds_share / seconds_per_run)

    # per-call mechanisms: a little slack; past it, no tight bound is claimed (in runs: the budget itself)
    sampler.deadline = deadline if in_runs else deadline + 0.1 * total
    try:
        rows = min(cap, runs("search", TIGHT_SEARCH_SHARE, 2 * draw_rate + search_rate))
        full_a, full_b = kept_a[-cap:], kept_b[-cap:]
        fresh = rows - len(full_a)
        pairs: tuple[FloatArray, FloatArray] | None = None
        if not sampler.sized:  # per-call runs are drawn paired: the search sees their marginals, the paired thresholds the pairs
            fresh = max(fresh, min(cap, runs("paired", TIGHT_PAIRED_SHARE, 2 * draw_rate + search_rate)))
        if fresh >= 1000:
            fa, fb = sampler.draw_pairs(d, d_prime, seeds[0], fresh)
            if not sampler.sized:
                pairs = (fa, fb)
            old = max(0, min(len(full_a), cap - fresh))
            full_a, full_b = full_a[len(full_a) - old :], full_b[len(full_b) - old :]
            w = max(full_a.shape[1], fa.shape[1])
            full_a, full_b = np.vstack([pad(full_a, w), pad(fa, w)]), np.vstack([pad(full_b, w), pad(fb, w)])
        elif rows < len(full_a):
            full_a, full_b = full_a[-max(rows, 10_000) :], full_b[-max(rows, 10_000) :]
        (sa, sb), names, start = sampler.view(full_a, full_b, structured=structured)
        del full_a, full_b
        planned = final_samples or int(total * 0.5 / (2 * draw_rate))  # (a first guess of) the final size, for scoring
        scorer = Scorer(len(sa), planned, delta=delta, alpha=alpha, shrink=TIGHT_SHRINK)
        candidates, _ = search(
            sa,
            sb,
            scorer,
            float_test=float_test,
            rng=rng,
            names=names,
            start=start,
            feature_rows=len(sa),
            every=True,
            binned_rows=True,
        )
        alignment = sampler.encoder.alignment() if structured else None
        if alignment is not None:  # nested outputs: the families again with each value in one column, parts, conjunctions
            aa, ab = alignment.apply(sa), alignment.apply(sb)
            on_aligned, _ = search(
                aa,
                ab,
                scorer,
                float_test=float_test,
                rng=rng,
                names=alignment.names,
                start=2,
                feature_rows=len(aa),
                every=True,
                binned_rows=True,
            )
            candidates += aligned_candidates(aa, ab, alignment, scorer, on_aligned)
            del aa, ab
        summaries = summary_features(sa, sb, names, start)
        if summaries:  # a vector: its sums, counts, max and min on many more runs (numbers only are kept)
            halved = 2 if pairs is not None else 1
            stream_rows = min(TIGHT_STORE // len(summaries), runs("summaries", TIGHT_SUMMARIES_SHARE, 2 * draw_rate) // halved)
            kept: list[tuple[FloatArray, FloatArray]] = []
            _stream(
                sampler,
                d,
                d_prime,
                seeds[1],
                stream_rows,
                structured,
                lambda ra, rb: kept.append(
                    (np.column_stack([f(ra) for f in summaries]), np.column_stack([f(rb) for f in summaries]))
                ),
                width=width,
                until=deadline if in_runs else math.inf,
                fixed=in_runs,
            )
            fa, fb = np.vstack([k[0] for k in kept]), np.vstack([k[1] for k in kept])
            del kept
            wide = Scorer(len(fa), planned, delta=delta, alpha=alpha, shrink=TIGHT_SHRINK)
            for j, feature in enumerate(summaries):
                found = threshold_candidate(fa[:, j], fb[:, j], wide, feature, "sums and differences")
                if found is not None:
                    candidates.append(found)
            del fa, fb
        if pairs is not None:  # thresholds scored by the paired bound
            (pa, pb), paired_names, paired_start = sampler.view(*pairs, structured=structured)
            del pairs
            candidates += paired_candidates(
                pa, pb, paired_names, paired_start, n_measure=planned, delta=delta, alpha=alpha, shrink=TIGHT_SHRINK
            )
            if alignment is not None:
                qa, qb = alignment.apply(pa), alignment.apply(pb)
                on_aligned = paired_candidates(
                    qa, qb, alignment.names, 2, n_measure=planned, delta=delta, alpha=alpha, shrink=TIGHT_SHRINK
                )
                candidates += [replace(c, event=replace(c.event, aligned=alignment)) for c in on_aligned]
                del qa, qb
            del pa, pb
        if not candidates:
            return replace(fast, tight_reason="no event separated the inputs on the search sample")
        # the proposals' counts on the search sample (pooled with the selection's for value sets, below)
        prior = np.array([(c.event.contains(sa).sum(), c.event.contains(sb).sum()) for c in candidates], dtype=np.float64)
        prior_n = len(sa)
        del sa, sb
        left = deadline - sampler.clock()
        if final_samples is not None:
            select_n = max(1000, runs("selection", 0.0, 1.0))
        else:
            select_n = max(1000, int(left * TIGHT_SELECT_SHARE / (2 * draw_rate * 1.5)))
        cells = np.zeros((len(candidates), 3))  # paired runs: E under both, under d only, under d_prime only
        judging = [0.0]  # seconds spent judging the candidates (the rest of the selection is drawing)

        def tally(ra: FloatArray, rb: FloatArray) -> None:
            begun = sampler.clock()
            for i, candidate in enumerate(candidates):
                ia, ib = candidate.event.contains(ra), candidate.event.contains(rb)
                cells[i] += (np.count_nonzero(ia & ib), np.count_nonzero(ia & ~ib), np.count_nonzero(~ia & ib))
            judging[0] += sampler.clock() - begun

        selecting = sampler.clock()
        # the selection only ranks (it certifies nothing), so the clock may end it: its share of the time
        # (in runs: no clock; chunks of a fixed size, since each chunk draws from its own stream)
        boxed = deadline if in_runs else min(deadline, selecting + 1.2 * TIGHT_SELECT_SHARE * left)
        # chunks of at least a second: drawn where the final sample will be (the workers, when
        # they run), so that the rate measured here is the rate the final sample is planned with
        chunk = 0 if in_runs else max(50_000, int(1.0 / (2 * draw_rate)))
        select_n = _stream(
            sampler, d, d_prime, seeds[2], select_n, structured, tally, until=boxed, width=width, chunk=chunk, fixed=in_runs
        )
        if select_n == 0:
            return replace(fast, tight_reason="no time left to choose among the tight proposals within max_seconds")
        drawing = sampler.clock() - selecting - judging[0]  # both inputs, measured now
        events = TIGHT_EVENTS if summaries else 1
        per_run_one = (drawing + judging[0] * min(1.0, events / len(candidates))) / select_n
        share = 0.9 if sampler.sized else PER_CALL_FINAL_SHARE
        final_n = int((deadline - sampler.clock()) * share / max(per_run_one, 1e-9))
        if final_samples is not None:
            final_n = final_samples
        elif sampler.sized:  # stopped by the clock at a chunk boundary (see below): plan generously
            final_n *= 4
        if final_n < 1000:
            return replace(fast, tight_reason="no time left for a tight measurement within max_seconds")
        # the selection ranks proposals on fresh counts, shrunk (TIGHT_SELECT_SHRINK) so that a rare
        # proposal that got lucky here does not win: the winner's curse is what costs tightness
        # Value sets (a prefix of few keys) pool their search counts with the selection's: their
        # search chose among few options, so its counts are nearly unbiased, and where runs are
        # expensive the selection alone is too small to rank a rare optimum fairly. Thresholds and
        # windows chose among thousands: they are ranked on the fresh selection counts only.
        selector = Scorer(select_n, final_n, delta=delta, alpha=alpha, shrink=TIGHT_SELECT_SHRINK)
        pooled = Scorer(select_n + prior_n, final_n, delta=delta, alpha=alpha, shrink=TIGHT_SELECT_SHRINK)
        forward = np.array([1 if c.direction == 1 else 0 for c in candidates], dtype=bool)
        keyed = np.array([c.family in POOLED_FAMILIES for c in candidates], dtype=bool)

        def oriented(table: FloatArray) -> tuple[FloatArray, FloatArray]:
            return np.where(forward, table[:, 0], table[:, 1]), np.where(forward, table[:, 1], table[:, 0])

        counts = np.column_stack([cells[:, 0] + cells[:, 1], cells[:, 0] + cells[:, 2]])  # hits under d, under d_prime
        unpaired = np.where(keyed, pooled.projected(*oriented(counts + prior)), selector.projected(*oriented(counts)))
        # The runs are paired (common random numbers): each proposal is also scored by the paired
        # bound, and certified by whichever of the two bounds projects higher (chosen here, before
        # the final sample is drawn).
        first_only, second_only = oriented(cells[:, 1:])
        paired, splits = paired_projection(
            cells[:, 0], first_only, second_only, select_n, final_n, delta=delta, alpha=alpha, shrink=TIGHT_SELECT_SHRINK
        )
        ranked = np.array(certified_together(unpaired, paired, cells, vector=bool(summaries)), dtype=np.int64)
        chosen = [candidates[int(i)] for i in ranked]
        by_pairs = paired[ranked] > unpaired[ranked]
        split = splits[ranked]
        hits = np.zeros((len(chosen), 3), dtype=np.int64)  # oriented: hits under the first, under the second, under both

        def measure(ra: FloatArray, rb: FloatArray) -> None:
            for i, candidate in enumerate(chosen):
                ia, ib = candidate.event.contains(ra), candidate.event.contains(rb)
                if candidate.direction != 1:
                    ia, ib = ib, ia
                ha, hb, both = int(np.count_nonzero(ia)), int(np.count_nonzero(ib)), int(np.count_nonzero(ia & ib))
                hits[i] += (ha, hb, both)

        # A vectorised mechanism's time does not depend on the values it draws, so stopping the final
        # sample at the deadline (chunk by chunk) leaves the counts binomial. A per-call mechanism's
        # time may (an SVT that stops early is faster): its final sample has PER_CALL_CHECKPOINTS sizes
        # fixed in advance, the counts are kept at each, and the bound is taken at the last one reached
        # with that checkpoint's share of α (Bonferroni), so that the clock never chooses the counts.
        # In runs, every size is fixed in advance: the whole sample, all of α (the deadline only guards).
        if sampler.sized or in_runs:
            weight = 1.0
            final_n = _stream(
                sampler, d, d_prime, seeds[3], final_n, structured, measure, until=deadline, width=width, fixed=in_runs
            )
            counted = hits.copy()
        else:
            checkpoints = [int(final_n * f) for f in PER_CALL_CHECKPOINTS]
            sampler.deadline = deadline + 0.05 * total  # past it, the last checkpoint reached is kept
            counted, reached, weight, streams = hits.copy(), 0, 0.0, seeds[3].spawn(len(checkpoints))
            try:
                for size, share, stream in zip(checkpoints, PER_CALL_CHECKPOINT_ALPHA, streams, strict=True):
                    _stream(sampler, d, d_prime, stream, size - reached, structured, measure, width=width)
                    reached, counted, weight = size, hits.copy(), share
            except OutOfTime:
                pass
            final_n = reached
    except OutOfTime:
        if sampler.wall_stopped:
            why = "the wall-clock cap stopped the tight search"
        elif in_runs:
            why = f"max_seconds (CPU) ran out before the tight mode's planned {final_samples:,} runs per input"
        else:
            why = "the mechanism ran out of time during the tight search"
        return replace(
            fast,
            tight_reason=f"{why}; no tight bound is claimed",
            cpu_seconds=sampler.clock() - cpu_started,
            wall_clock_stopped=sampler.wall_stopped,
        )
    if final_n == 0:
        return replace(
            fast,
            tight_reason="no time left for a tight measurement within max_seconds"
            + (" (stopped by the wall-clock cap)" if sampler.wall_stopped else ""),
            cpu_seconds=sampler.clock() - cpu_started,
            wall_clock_stopped=sampler.wall_stopped,
        )
    hits = counted
    # Bonferroni over the few events certified together and the checkpoints (both fixed before measuring).
    share = alpha * weight / len(chosen)
    both = hits[:, 2]
    lowers = np.where(
        by_pairs,
        paired_epsilon_lower_bound(both, hits[:, 0] - both, hits[:, 1] - both, final_n, delta=delta, alpha=share, split=split),
        epsilon_lower_bound(hits[:, 0], hits[:, 1], final_n, delta=delta, alpha=share),
    )
    best = int(np.argmax(lowers))
    tight = replace(
        fast,
        tight_epsilon_lower_bound=max(0.0, float(lowers[best])),
        tight_event=chosen[best].event.description,
        tight_family=chosen[best].family,
        tight_samples=final_n,
        tight_seconds=time.perf_counter() - wall_begun,
        tight_hits=(int(hits[best, 0]), int(hits[best, 1])),
        tight_paired=bool(by_pairs[best]),
        tight_cells=(int(both[best]), int(hits[best, 0] - both[best]), int(hits[best, 1] - both[best])),
        tight_reason=(
            "the final sample was cut short by the wall-clock cap (the CPU budget was not spent); "
            "the bound holds on the runs drawn"
            if sampler.wall_stopped
            else ""
        ),
        seconds=time.perf_counter() - wall_started,
        cpu_seconds=sampler.clock() - cpu_started,
        wall_clock_stopped=sampler.wall_stopped,
    )
    return agree_with_bounds(tight)
