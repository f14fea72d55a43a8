"""Every command's output as a typed document: what `--format json` encodes, what the CSV and
table renderers lay out, and what docs/schema/<command>.schema.json publishes (generated from
these by scripts/schemas.py). Times are in µs, sizes in bytes, bandwidths in GB/s (1e9 bytes/s).

Within one SCHEMA_VERSION keys are only ever added; removing a key or changing its meaning
raises the version (tests/documents/test_schemas.py holds each released version's schema).

A struct that writes an analysis class of the same meaning (in µs where it is in ns) is named
after it with `Json` added (`BreakdownJson` writes `analysis.Breakdown`); the schema names its
definition without the suffix (documents/publish.py).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from traceview.analysis.prediction import CheckedPrediction
from traceview.analysis.scaling import ScalingRow

SCHEMA_VERSION = 1
WRITES_SUFFIX = "Json"  # BreakdownJson: how a document writes an analysis.Breakdown

Us = Annotated[float, msgspec.Meta(description="microseconds")]
Struct = msgspec.Struct


class Document(Struct, kw_only=True):
    """The envelope every command's document shares."""

    traceview_version: str
    schema_version: int
    command: str


class Error(Struct, kw_only=True):
    """An input that could not be read; `lost` when through no fault of the input (a killed
    worker, a sweep's point that did not finish)."""

    path: str
    message: str
    lost: bool


class FindingJson(Struct, kw_only=True):
    """What to change, in words, with the numbers it rests on (docs/findings.md)."""

    rule: str
    job: str
    what: str
    action: str
    numbers: dict[str, float | int | str]


class NoteJson(Struct, kw_only=True):
    """`lossy`: input was dropped; `caveat`: a figure may mislead; `info`."""

    severity: Literal["info", "lossy", "caveat"]
    message: str


# -- analyze -------------------------------------------------------------------------------


class BreakdownJson(Struct, kw_only=True):
    """One window's time by what ran (docs/metrics.md); null where the trace cannot tell (no
    communication recorded)."""

    window_us: Us
    compute_us: Us
    comm_us: Us | None
    overlap_us: Us | None
    exposed_comm_us: Us | None
    compute_only_us: Us | None
    idle_us: Us | None
    overlap_pct: float | None


class StepRow(BreakdownJson, kw_only=True):
    """A profiler step, or (before_first_step) the work launched before the first one."""

    step: int | None
    before_first_step: bool
    partial: bool  # the trace was cut short and this step may be missing work
    kernels: int | None  # before the first step: what ran there
    memcpy: int | None
    memset: int | None
    # docs/metrics.md "Overlap tax": the step's paired launches' extra time beside communication
    # (null: none of its launches could be paired, or the rank's tax is not measured)
    overlap_tax_us: Us | None = None


class OverlapTaxJson(Struct, kw_only=True):
    """docs/metrics.md "Overlap tax": how much longer compute kernels ran beside communication
    than the same launches alone, over the rank's steps."""

    tax_us: Us  # the steps' taxes summed
    steps: int  # the rank's steps with work
    tax_per_step_us: Us
    comm_cost_us: Us | None  # over those steps: exposed communication + the tax
    pairs: int  # launches beside communication with an alone baseline
    kernels: int  # distinct launches among them: (name, n-th in its step) or (name, shape)
    beside_us: Us  # compute launches' time beside communication ...
    paired_us: Us  # ... of which the paired launches'
    coverage_pct: float | None
    slowdown: list[float] | None  # duration ÷ baseline: 25th, 50th, 75th percentile
    alone: list[float] | None  # the same between alone runs: the noise
    beyond_noise: bool
    caveat: str | None


class CollectiveTotal(Struct, kw_only=True):
    collective: str
    count: int
    total_us: Us
    bytes: int | None  # over the calls whose size is recorded
    bytes_known: int  # calls with a recorded size


class Rank(Struct, kw_only=True):
    trace: str
    job: str  # the job it is a rank of (its folder, or the trace itself)
    rank: int | None
    world_size: int | None
    backend: str | None
    mode: Literal["gpu", "cpu"]
    size_bytes: int
    truncated: bool
    notes: list[NoteJson]
    total: BreakdownJson | None  # null when the trace holds no work at all
    steps: list[StepRow]
    collectives: list[CollectiveTotal]
    overlap_tax: OverlapTaxJson | None = None  # null: CPU traces, communication not recorded


class Spread(Struct, kw_only=True):
    """One metric over a job's ranks; `worst_rank` is the rank at the worse end."""

    min: float | None
    median: float | None
    max: float | None
    worst_rank: int | None


class JobSpread(Struct, kw_only=True):
    job: str
    ranks: int
    spread: dict[str, Spread]  # by metric: window_us ... idle_us, overlap_pct


class AnalyzeDocument(Document, kw_only=True):
    command: Literal["analyze"] = "analyze"
    ranks: list[Rank]
    jobs: list[JobSpread]
    findings: list[FindingJson]
    errors: list[Error]


# -- collectives ---------------------------------------------------------------------------


class JobHead(Struct, kw_only=True):
    """What every per-job section starts with."""

    job: str  # its folder, or the trace itself
    folder: str | None
    traces: list[str]
    strategy: str | None
    strategy_source: str  # "run record", "trace metadata", "inferred" or "unknown"
    strategy_evidence: str | None  # what an inferred strategy rests on


class Call(Struct, kw_only=True):
    """One collective call on one rank (docs/metrics.md "Collectives")."""

    rank: int | None
    step: int | None
    index: int
    collective: str | None
    label: str | None  # "bucket 3", "blocks.2" (an FSDP module), or null
    pg: str | None
    seq: int | None
    group_size: int | None
    backward: bool | None
    ready_us: Us | None
    start_us: Us | None
    end_us: Us | None
    queue_us: Us | None
    duration_us: Us | None
    wait_us: Us | None  # aligned jobs: until the last rank arrived
    transfer_us: Us | None  # after it arrived
    bytes: int | None
    elements: int | None
    algbw_gbps: float | None
    busbw_gbps: float | None
    bandwidth_on: str | None  # "transfer" or "duration" (a lower bound)
    exposed_us: Us | None  # the call's time with no compute beside it
    # Its share of the rank's exposed time: concurrent calls counted once (docs/metrics.md).
    exposed_share_us: Us | None
    # busbw ÷ the link's peak per direction, in %, where the link is known ("Against the link's
    # peak"); a lower bound where bandwidth_on is "duration"
    link_peak_pct: float | None = None


class ExposedCallJson(Struct, kw_only=True):
    index: int
    collective: str | None
    label: str | None
    name: str  # "bucket 3", "reduce_scatter blocks.2", else the collective and its index
    exposed_us: Us


class ExposedStep(Struct, kw_only=True):
    rank: int | None
    step: int | None
    exposed_us: Us  # the union: the calls' exposed shares summed
    calls: list[ExposedCallJson]  # most exposed first


class BackwardTailJson(Struct, kw_only=True):
    rank: int | None
    step: int
    tail_us: Us


class Fit(Struct, kw_only=True):
    """duration = α + bytes / bandwidth over one collective type's calls."""

    collective: str
    calls: int
    distinct_sizes: int
    size_clusters: int
    alpha_us: Us | None  # only where the fit is trusted
    bandwidth_gbps: float | None
    r2: float | None
    confidence: Literal["high", "medium", "low"]
    why: str
    size_for_90pct_bytes: float | None
    median_bytes: float | None
    step_bytes: float | None
    step_share: float | None
    one_bucket: bool
    advice: str


class LinkJson(Struct, kw_only=True):
    """docs/metrics.md "Against the link's peak": the link a job's collectives ran on."""

    name: str  # "NVLink 3", or "given" (--link-gbps)
    peak_gbps: float  # per direction
    scope: str  # "within a node", "as given"
    basis: str  # what decided it


class AgainstPeak(Struct, kw_only=True):
    collective: str | None
    bytes: int
    calls: int
    busbw_gbps: float  # their median
    lower_bound: bool  # some on whole durations (ranks not aligned): the bandwidth is at least this
    peak_pct: float  # busbw ÷ the link's peak per direction, in %


class JobCalls(JobHead, kw_only=True):
    calls: list[Call]
    exposed_by_step: list[ExposedStep]
    bucket_params: dict[str, list[str]]  # DDP bucket index -> its parameters (run record)
    backward_tails: list[BackwardTailJson]
    aligned: bool
    not_aligned_reason: str | None
    fits_on: Literal["transfer", "duration"]
    fits: list[Fit]
    link: LinkJson | None = None
    no_link_reason: str | None = None  # why the link's peak is not known
    against_peak: list[AgainstPeak] = msgspec.field(default_factory=list)


class CollectivesDocument(Document, kw_only=True):
    command: Literal["collectives"] = "collectives"
    jobs: list[JobCalls]


# -- ranks ---------------------------------------------------------------------------------


class Alignment(Struct, kw_only=True):
    rank: int
    host: str | None = None  # where the rank ran: its trace's host name, else the run record's
    clock_offset_us: Us
    residual_us: Us
    wait_us: Us
    transfer_us: Us
    last_arrivals: int  # matched collectives it arrived at last
    caused_wait_us: Us = 0.0  # the others' wait at those: what its lateness cost them


class StepSkewJson(Struct, kw_only=True):
    step: int
    shortest_us: Us
    longest_us: Us
    skew_us: Us
    slowest_rank: int  # the rank whose step was longest (not the straggler: see Alignment)


class StepStragglerJson(Struct, kw_only=True):
    """docs/metrics.md "Stragglers": the rank the others waited for in one step."""

    step: int
    collectives: int  # matched collectives in the step
    wait_share: float  # the ranks' wait / their time in the step's collectives
    rank: int | None  # None: they waited less than 10 % of it, or two ranks tie
    last_at: int  # the step's collectives that rank arrived last at
    caused_us: Us  # the others' wait at those collectives


class Stragglers(Struct, kw_only=True):
    """Whether the rank waited for is the same step after step (docs/metrics.md "Stragglers")."""

    verdict: Literal["one rank", "rotating", "undecided", "too few steps"]
    rank: int | None  # the straggler of the most steps (None when tied or none)
    steps_waited_for: int  # steps that rank is the straggler of
    steps_with_a_straggler: int
    ranks_waited_for: int  # ranks that are some step's straggler
    chance: float | None  # how likely ranks drawn at random each step would do as `rank` did
    per_step: list[StepStragglerJson]


class DesyncSignJson(Struct, kw_only=True):
    """docs/metrics.md "Desync": one place the ranks' collectives do not line up."""

    kind: Literal["missing", "mismatch", "stops early"]
    pg: str
    rank: int
    others: list[int]  # the ranks that ran the call this rank lacks or differs from
    seq: int | None
    collective: str | None  # the others' call
    bytes: int | None
    step: int | None
    others_dur_us: Us | None  # how long the others spent in it (median)
    said: str
    trace_goes_on: bool | None  # stops early: whether this rank's trace runs past their call


class DesyncJson(Struct, kw_only=True):
    groups: int  # process groups checked
    calls: int  # their collective calls
    keyed_by: str  # "sequence numbers", "steps", "sequence numbers and steps", "-"
    signs: list[DesyncSignJson]
    unjudged: list[str]  # calls not checked, and why


class JobRanks(JobHead, kw_only=True):
    ranks: int
    compared: bool  # two or more traces of known rank: the figures below are computed
    aligned: bool
    reason: str | None
    matched_by: str | None
    reference_rank: int | None
    matched_collectives: int
    rejected_matches: int
    unmatched_calls: int
    straggler: int | None  # the rank whose late arrivals cost the others the most waiting
    per_rank: list[Alignment]
    step_skew: list[StepSkewJson]
    stragglers: Stragglers | None = None  # aligned jobs only
    desync: DesyncJson | None = None  # two or more ranks


class RanksDocument(Document, kw_only=True):
    command: Literal["ranks"] = "ranks"
    jobs: list[JobRanks]


# -- compare -------------------------------------------------------------------------------


class CompareDocument(Document, kw_only=True):
    command: Literal["compare"] = "compare"
    runs: list[ScalingRow]  # docs/metrics.md "Scaling"
    findings: list[FindingJson]
    errors: list[Error]
    # docs/metrics.md "Predictions checked": measured runs beside the model's prediction for them
    predictions_checked: list[CheckedPrediction] = msgspec.field(default_factory=list)


# -- diff ----------------------------------------------------------------------------------


class ChangeJson(Struct, kw_only=True):
    """docs/metrics.md "Diff": one figure per rank and step, before (run A) and after (run B)."""

    what: str
    before: float
    after: float
    change: float  # after - before
    change_pct: float | None  # of before
    noise: float | None  # twice the standard error of the difference of the means
    within_noise: bool | None  # |change| <= noise; None where the runs' spread is unknown


class CallsChangeJson(Struct, kw_only=True):
    name: str  # a collective type, or a bucket / FSDP module
    calls: ChangeJson
    megabytes: ChangeJson
    duration_ms: ChangeJson
    exposed_ms: ChangeJson


class RankChangeJson(Struct, kw_only=True):
    """One rank in both runs against itself, per its steps (its steps' spread the noise)."""

    rank: int
    step_ms: ChangeJson
    compute: ChangeJson
    exposed: ChangeJson  # exposed communication
    idle: ChangeJson
    waiting: ChangeJson | None  # for the last rank, at collectives; None: a run not aligned


class MostChangedJson(Struct, kw_only=True):
    figure: str  # "compute", "waiting", "exposed communication"
    rank: int  # the rank whose figure changed most
    change: ChangeJson


class SetupChangeJson(Struct, kw_only=True):
    what: str  # "GPU", "world size", "strategy", "bucket_cap_mb", "torch", ...
    before: str  # as run A's traces or run record say it ("unknown": they do not)
    after: str


class DiffDocument(Document, kw_only=True):
    command: Literal["diff"] = "diff"
    before: str  # run A
    after: str  # run B
    rank_steps: list[int]  # the rank-steps each run's means are over
    step_ms: ChangeJson
    parts: list[ChangeJson]  # compute, exposed communication, idle: they sum to step_ms
    collectives: list[CallsChangeJson]
    labels: list[CallsChangeJson]
    kernels: list[ChangeJson]  # the work whose time per rank and step changed most
    caveats: list[str]
    errors: list[Error]
    steps: list[int] = msgspec.field(default_factory=list)  # the steps each side's noise is over
    ranks: list[RankChangeJson] = msgspec.field(default_factory=list)  # each rank in both runs
    most_changed: list[MostChangedJson] = msgspec.field(default_factory=list)  # per figure
    setup: list[SetupChangeJson] = msgspec.field(default_factory=list)  # what differs
