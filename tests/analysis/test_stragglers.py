"""Straggler recurrence (docs/metrics.md "Stragglers"): hand-built jobs where the rank each step
waits for is set by hand, with the counts and chances worked out below each."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

import traceview
from tests import tracebuild as tb
from tests.cli.run_cli import traceview as cli
from traceview.analysis.stragglers import StepStraggler

ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def stepped(tmp_path: Path, late: list[int | None], ranks: int = 4) -> Path:
    """Step s+1 = [1000 s, 1000 s + 1000) µs holds one 1 MB all-reduce ending at 1000 s + 450 on
    every rank. Every rank arrives at 1000 s + 350 except late[s], which arrives 70 µs later
    (None: all at once)."""
    folder = tmp_path / "job"
    folder.mkdir(parents=True)
    for rank in range(ranks):
        events: list[tb.Event] = []
        for s, who in enumerate(late):
            base = 1000 * s
            start = base + (420 if who == rank else 350)
            events += [
                tb.step(s + 1, base, 1000),
                tb.launch(s + 1, start - 10),
                tb.kernel(ALLREDUCE, start, base + 450 - start, corr=s + 1, stream=20,
                          **{"Collective name": "allreduce", "In msg nelems": 1 << 18,
                             "Out msg nelems": 1 << 18, "dtype": "Float",
                             "Process Group Name": "0", "Seq": s + 1}),
            ]  # fmt: skip
        tb.write(folder / f"rank{rank}.json", tb.document(events, rank=rank, world=ranks))
    return folder


def test_one_rank_late_every_step_recurs(tmp_path):
    found = traceview.load(stepped(tmp_path, [2] * 10)).report.recurrence
    assert found is not None
    # Each step: ranks 0, 1, 3 wait 70 µs for rank 2 (caused 210 µs); the ranks spend
    # 3 × 100 + 30 = 330 µs in the call: a wait share of 210 / 330.
    assert found.steps[0] == StepStraggler(
        step=1, collectives=1, wait_share=pytest.approx(210 / 330), rank=2, last_at=1,
        caused_ns=210_000,
    )  # fmt: skip
    assert [s.rank for s in found.steps] == [2] * 10
    # Ranks drawn at random: 4 ranks × (1/4)^10 that one of them is drawn all 10 times.
    assert (found.verdict, found.rank, found.count, found.judged) == ("one rank", 2, 10, 10)
    assert found.chance == pytest.approx(4 * 0.25**10)


def test_a_different_rank_each_step_rotates(tmp_path):
    found = traceview.load(stepped(tmp_path, [0, 1, 2, 3, 0, 1, 2, 3])).report.recurrence
    assert found is not None
    assert [s.rank for s in found.steps] == [0, 1, 2, 3, 0, 1, 2, 3]
    # Each rank twice: no rank stands out (rank None), none is the straggler in more than half.
    assert (found.verdict, found.rank, found.count, found.distinct) == ("rotating", None, 2, 4)


def test_steps_without_waiting_name_no_one_and_too_few_say_nothing(tmp_path):
    found = traceview.load(stepped(tmp_path, [None, 3, None, 3])).report.recurrence
    assert found is not None
    # Arriving together, nobody waits: those steps have no straggler; two steps are too few.
    assert [(s.step, s.rank, s.wait_share) for s in found.steps] == [
        (1, None, 0.0), (2, 3, pytest.approx(210 / 330)), (3, None, 0.0),
        (4, 3, pytest.approx(210 / 330)),
    ]  # fmt: skip
    assert (found.verdict, found.judged, found.rank, found.count) == ("too few steps", 2, 3, 2)


def test_two_ranks_need_eight_steps_to_tell_one_from_chance(tmp_path):
    # Of two ranks one is always last: 5 of 5 steps happen by chance 2 × (1/2)^5 = 6.25 % of
    # the time, more than 1 %: undecided. 8 of 8: 2 × (1/2)^8 = 0.78 %: one rank.
    five = traceview.load(stepped(tmp_path / "a", [1] * 5, ranks=2)).report.recurrence
    eight = traceview.load(stepped(tmp_path / "b", [1] * 8, ranks=2)).report.recurrence
    assert five is not None and eight is not None
    # Of two ranks, the one waited for: rank 0 waits 70 of its 100 µs, rank 1 is in it 30 µs.
    assert five.steps[0].wait_share == pytest.approx(70 / 130)
    assert (five.verdict, five.chance) == ("undecided", pytest.approx(2 * 0.5**5))
    assert (eight.verdict, eight.chance) == ("one rank", pytest.approx(2 * 0.5**8))


def test_not_aligned_ranks_get_no_recurrence(tmp_path):
    folder = tmp_path / "job"
    folder.mkdir()
    tb.write(folder / "rank0.json", tb.document([tb.step(1, 0, 100)], rank=0, world=2))
    tb.write(folder / "rank1.json", tb.document([tb.step(1, 0, 100)], rank=1, world=2))
    assert traceview.load(folder).report.recurrence is None


def test_the_straggler_finding_says_it_recurs(tmp_path):
    (found,) = traceview.load(stepped(tmp_path, [2] * 10)).findings
    assert found.rule == "straggler"
    # 70 of the others' 100 µs waited, each step; rank 2 is the step's straggler in all 10.
    assert found.numbers == {
        "rank": 2, "last_arrivals": 10, "matched": 10, "others_wait_pct": 70.0,
        "steps_waited_for": 10, "steps_with_a_straggler": 10, "recurrence": "one rank",
        # The GPU's step windows span each rank's kernels: rank 2's starts 70 µs later.
        "median_step_skew_ms": 0.07,
    }  # fmt: skip
    assert "it is the rank waited for in 10 of 10 steps with a straggler, the same rank step " \
        "after step (by chance 4e-06)" in found.what  # fmt: skip


def test_a_rotating_straggler_points_at_what_every_rank_does(tmp_path):
    (found,) = traceview.load(stepped(tmp_path, [0, 1, 2, 3, 0, 1, 2, 3])).findings
    # Each rank last at 2 of 8 calls: no straggler; the ranks wait 210 of their 330 µs a step.
    assert found.rule == "rotating_stragglers"
    assert found.numbers == {
        "ranks_waited_for": 4, "steps_with_a_straggler": 8, "most_steps_one_rank": 2,
        "wait_pct": 63.6,
    }  # fmt: skip
    assert "not at one host" in found.action and "data loading" in found.action


def test_ranks_says_the_stragglers_by_step_in_every_format(tmp_path):
    folder = stepped(tmp_path, [2, 2, 2, 2, 2, 2, None, 1, 2, 2])
    table = cli("ranks", folder)
    assert table.code == 0, table.err
    # 9 steps had a straggler; rank 2 in 8: 4 × P(Binomial(9, 1/4) ≥ 8) = 4 × (9 × (1/4)^8 ×
    # 3/4 + (1/4)^9) = 4 × 28/4^9 = 4.27e-4.
    assert (
        "  stragglers by step: 9 of 10 steps had a straggler; rank 2 in 8 of them, the same "
        "rank step after step (by chance 0.0004)\n"
        "    steps 1–6: rank 2 · step 7: - · step 8: rank 1 · steps 9–10: rank 2\n"
    ) in table.out
    doc = json.loads(cli("ranks", folder, "--format", "json").out)
    said = doc["jobs"][0]["stragglers"]
    assert (said["verdict"], said["rank"], said["steps_waited_for"]) == ("one rank", 2, 8)
    assert said["chance"] == pytest.approx(4 * 28 / 4**9)
    assert said["per_step"][7] == {
        "step": 8, "collectives": 1, "wait_share": pytest.approx(210 / 330), "rank": 1,
        "last_at": 1, "caused_us": 210.0,
    }  # fmt: skip
    rows = list(csv.DictReader(io.StringIO(cli("ranks", folder, "--format", "csv").out)))
    assert [r["steps_waited_for"] for r in rows] == ["0", "1", "8", "0"]
