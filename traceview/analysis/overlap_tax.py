"""The overlap tax (docs/metrics.md "Overlap tax"): how much slower compute kernels run while
communication runs beside them. NCCL's kernels take SMs and memory bandwidth, so a GEMM that
overlaps an all-reduce can take longer than the same GEMM alone; "hidden" communication costs
that slowdown.

A launch is *beside communication* when communication ran for at least half its time, and
*alone* when none ran during it. Its baseline, what it takes alone, comes from the same work run
alone, on the same rank:

- across steps: the same launch of the training loop, the same kernel name launched the same
  n-th time in its step (a loop whose shapes do not change runs it on the same shapes every
  step); the median of its alone runs in the other steps. Steps that launched a name a
  different number of times than most steps did are left out for that name, as its n-th launch
  may be another op there;
- else within its step, where the trace records each kernel's launch shape (grid and block):
  the launches of the same kernel name and shape, in the same pass (forward or backward), in the
  same step, that ran alone, at least two, whose longest took at most SAME_WORK times their
  shortest (the same grid can cover problems of different depth, a GEMM's K: alone runs that
  disagree may be other work, and are not used); their median.

The tax of a step is the sum, over its launches beside communication that have a baseline, of
(duration − baseline)."""

from __future__ import annotations

import msgspec
import numpy as np
import polars as pl

from traceview.algebra import covered_length
from traceview.analysis.stack import Stack
from traceview.parse.args import LAUNCH_SCHEMA
from traceview.queries import collected

# Quartiles (25th, 50th, 75th percentile) of duration ÷ baseline.
Quartiles = tuple[float, float, float]


class StepTax(msgspec.Struct, frozen=True, kw_only=True):
    step: int
    tax_ns: int
    pairs: int  # launches beside communication with a baseline


class OverlapTax(msgspec.Struct, frozen=True, kw_only=True):
    """One rank's overlap tax over its steps."""

    tax_ns: int  # the steps' taxes summed
    pairs: int  # launches beside communication that have a baseline
    # distinct launches among them: (name, n-th in the step), or (name, shape) within a step
    kernels: int
    beside_ns: int  # time of every compute launch beside communication
    paired_ns: int  # of which the paired launches' (the rest has no alone run to compare)
    slowdown: Quartiles | None  # duration ÷ baseline of the paired launches
    alone: Quartiles | None  # the same of alone launches with two alone runs or more: the noise
    by_step: tuple[StepTax, ...]

    @property
    def coverage(self) -> float | None:
        """The share of the time beside communication that the tax could be measured on."""
        return self.paired_ns / self.beside_ns if self.beside_ns else None

    @property
    def beyond_noise(self) -> bool:
        """The middle half of the slowdowns lies above the middle half of the alone runs."""
        if self.slowdown is None or self.alone is None:
            return False
        return self.slowdown[0] > self.alone[2]

    @property
    def caveat(self) -> str | None:
        """Why the tax may mislead, where it may."""
        if not self.pairs:
            return (
                "not measured: no kernel launch ran both beside communication and alone, in "
                "another step or with the same launch shape in its own"
            )
        said = []
        if not self.beyond_noise:
            said.append(
                "within noise: the middle half of the slowdowns does not clear that of the "
                "alone runs"
                if self.alone is not None
                else "no launch ran alone twice, so the noise is not known"
            )
        if (coverage := self.coverage) is not None and coverage < COVERAGE:
            said.append(
                "measured on less than half of the compute beside communication: the rest "
                "had no alone run of the same work to compare"
            )
        return "; ".join(said) or None


# Below this share of the compute beside communication, the tax is said to be partial.
COVERAGE = 0.5
# Within a step, the alone runs of one kernel and launch shape are taken as the same work where
# the longest took at most this many times the shortest; runs of one GEMM on the same problem
# vary by a few percent, where a K four times as deep takes about four times as long.
SAME_WORK = 1.5
SAME_SHAPE_ALONE = 2  # alone runs needed within a step: fewer cannot show they agree


def overlap_taxes(stack: Stack) -> list[OverlapTax | None]:
    """Per part: its tax, or None where it cannot be measured (CPU traces, communication not
    recorded, no step)."""
    out: list[OverlapTax | None] = [None] * stack.parts
    if stack.mode != "gpu":
        return out
    work = stack.work
    compute = collected(work.lazy().filter(pl.col("kind") == "compute"), work.height)
    shapes = stack.launch_shapes  # aligned with the compute intervals, where known
    if shapes.height != compute.height:
        shapes = pl.DataFrame(schema=LAUNCH_SCHEMA).clear(compute.height)
    in_step = compute["step"].is_not_null()
    rows, shapes = compute.filter(in_step), shapes.filter(in_step)
    if rows.height == 0:
        return out
    covered = covered_length(stack.comm, stack.moved(rows, "ts_ns"), stack.moved(rows, "end_ns"))
    launches = _launches(
        rows.select(
            part=pl.Series(stack.part_of(rows)),
            step="step",
            name="name",
            order=pl.coalesce("launch_ns", "ts_ns"),
            start="ts_ns",
            dur=pl.col("end_ns") - pl.col("ts_ns"),
            covered=pl.Series(covered),
            backward=pl.col("backward").fill_null(False),
        ).hstack(shapes)
    )
    return _taxes(launches, stack.comm_measured)


def _launches(rows: pl.DataFrame) -> pl.DataFrame:
    """Each compute launch with its place (n-th of its name in its step), its launch shape
    (null where not recorded), whether it ran beside communication or alone, and its baseline
    with the alone runs it was taken from: across steps (`by_steps`), else within its step."""
    rows = (
        rows.sort("part", "step", "order", "start")
        .with_columns(
            nth=pl.int_range(pl.len()).over("part", "step", "name"),
            count=pl.len().over("part", "step", "name"),
        )
        # The count most steps launched (one vote a step: its first launch of the name).
        .with_columns(
            usual=pl.col("count").filter(pl.col("nth") == 0).mode().min().over("part", "name")
        )
        .with_columns(
            beside=pl.col("covered") * 2 >= pl.col("dur"),
            alone=pl.col("covered") == 0,
            in_usual_step=pl.col("count") == pl.col("usual"),
        )
    )
    # Across steps: a launch of a step with the usual count, by (name, n-th).
    across = pl.col("dur").filter(pl.col("alone") & pl.col("in_usual_step"))
    across_key = ["part", "name", "nth"]
    # Within a step: by (name, launch shape, pass), where the alone runs agree. (DDP's forward
    # runs alone and its backward beside the all-reduces: a backward GEMM of one grid may be
    # other work than a forward one, a deeper K.)
    shaped = pl.all_horizontal(pl.col(c).is_not_null() for c in LAUNCH_SCHEMA)
    within = pl.col("dur").filter(pl.col("alone") & shaped)
    within_key = ["part", "step", "name", *LAUNCH_SCHEMA, "backward"]
    rows = rows.with_columns(
        across_base=across.median().over(across_key),
        across_runs=across.len().over(across_key),
        within_base=within.median().over(within_key),
        within_runs=within.len().over(within_key),
        within_agree=(within.max() <= SAME_WORK * within.min()).over(within_key),
    )
    # (an alone launch's own run is no baseline for it: another step's must be there)
    others = pl.col("across_runs") - pl.col("alone").cast(pl.Int64)
    by_steps = pl.col("in_usual_step") & (others > 0)
    by_shape = shaped & (pl.col("within_runs") >= SAME_SHAPE_ALONE) & pl.col("within_agree")
    return rows.with_columns(
        baseline=pl.when(by_steps)
        .then(pl.col("across_base"))
        .when(by_shape)
        .then(pl.col("within_base")),
        alone_runs=pl.when(by_steps)
        .then(pl.col("across_runs"))
        .when(by_shape)
        .then(pl.col("within_runs"))
        .otherwise(0),
        by_steps=by_steps,
    )


def _taxes(launches: pl.DataFrame, comm_measured: np.ndarray) -> list[OverlapTax | None]:
    """Each part's tax from its launches (None: a part with none, or no communication seen):
    every part in the same few queries (a query a part cost a small rank's ingest ~10 ms)."""
    out: list[OverlapTax | None] = [None] * len(comm_measured)
    paired = pl.col("baseline").is_not_null()
    beside = launches.filter(pl.col("beside") & (pl.col("covered") > 0)).with_columns(
        paired=paired,
        extra=(pl.col("dur") - pl.col("baseline")).round().cast(pl.Int64),
        ratio=pl.col("dur") / pl.col("baseline"),
    )
    ratio = pl.col("ratio").filter(paired & pl.col("ratio").is_finite())
    totals = beside.group_by("part").agg(
        tax_ns=pl.col("extra").sum(),
        pairs=pl.col("paired").sum(),
        # the launches compared: (name, n-th) across steps, (name, shape) within one
        kernels=pl.struct(
            pl.col("name"),
            pl.when("by_steps").then("nth").alias("nth"),
            *(pl.when(~pl.col("by_steps")).then(c).alias(c) for c in LAUNCH_SCHEMA),
        )
        .filter(paired)
        .n_unique(),
        beside_ns=pl.col("dur").sum(),
        paired_ns=pl.col("dur").filter(paired).sum(),
        **{f"s{i}": ratio.quantile(q, "linear") for i, q in enumerate(QUARTILES)},
    )
    noise = (
        launches.filter(pl.col("alone") & (pl.col("alone_runs") >= 2))
        .with_columns(ratio=pl.col("dur") / pl.col("baseline"))
        .filter(pl.col("ratio").is_finite())
        .group_by("part")
        .agg(**{f"a{i}": pl.col("ratio").quantile(q, "linear") for i, q in enumerate(QUARTILES)})
    )
    steps = (
        beside.filter(paired)
        .group_by("part", "step")
        .agg(tax_ns=pl.col("extra").sum(), pairs=pl.len())
        .sort("part", "step")
    )
    by_step: dict[int, list[StepTax]] = {}
    for p, step, tax, n in steps.select("part", "step", "tax_ns", "pairs").iter_rows():
        by_step.setdefault(p, []).append(StepTax(step=step, tax_ns=tax, pairs=n))
    found = {
        row["part"]: row for row in totals.join(noise, on="part", how="left").iter_rows(named=True)
    }
    for p in launches["part"].unique().to_list():
        if not comm_measured[p]:
            continue
        row = found.get(p)
        if row is None:  # no launch beside communication
            out[p] = OverlapTax(tax_ns=0, pairs=0, kernels=0, beside_ns=0, paired_ns=0,
                                slowdown=None, alone=None, by_step=())  # fmt: skip
            continue
        out[p] = OverlapTax(
            tax_ns=int(row["tax_ns"] or 0),
            pairs=int(row["pairs"]),
            kernels=int(row["kernels"]),
            beside_ns=int(row["beside_ns"]),
            paired_ns=int(row["paired_ns"] or 0),
            slowdown=_quartiles(row, "s"),
            alone=_quartiles(row, "a"),
            by_step=tuple(by_step.get(p, ())),
        )
    return out


# The quartiles said: 25th, 50th and 75th percentile (linear between values, as numpy's).
QUARTILES = (0.25, 0.5, 0.75)


def _quartiles(row: dict[str, object], prefix: str) -> Quartiles | None:
    values = [row.get(f"{prefix}{i}") for i in range(len(QUARTILES))]
    if any(v is None for v in values):
        return None
    q1, q2, q3 = (float(v) for v in values)  # type: ignore[arg-type]
    return q1, q2, q3
