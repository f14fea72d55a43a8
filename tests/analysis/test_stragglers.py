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


def all_reduce(arrive: float, end: float, seq: int) -> list[tb.Event]:
    """A 1 MB all-reduce kernel from `arrive` to `end` µs, launched 10 µs before, at `seq`."""
    return [
        tb.launch(seq, arrive - 10),
        tb.kernel(ALLREDUCE, arrive, end - arrive, corr=seq, stream=20,
                  **{"Collective name": "allreduce", "In msg nelems": 1 << 18,
                     "Out msg nelems": 1 << 18, "dtype": "Float", "Process Group Name": "0",
                     "Seq": seq}),
    ]  # fmt: skip


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
            events += [tb.step(s + 1, base, 1000), *all_reduce(start, base + 450, s + 1)]
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
    # 70 of the others' 100 µs waited, each step: 3 × 70 × 10 = 2.1 ms, all the waiting there
    # is; rank 2 is the step's straggler in all 10.
    assert found.numbers == {
        "rank": 2, "caused_wait_ms": 2.1, "caused_share_pct": 100.0,
        "others_wait_for_it_pct": 70.0, "steps_waited_for": 10, "steps_with_a_straggler": 10,
        "recurrence": "one rank",
    }  # fmt: skip
    assert "it is the rank waited for longest in 10 of 10 steps with a straggler, the same rank step " \
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


@pytest.mark.cli
def test_ranks_says_the_stragglers_by_step_in_every_format(tmp_path):
    folder = stepped(tmp_path, [2, 2, 2, 2, 2, 2, None, 1, 2, 2])
    table = cli("ranks", folder)
    assert table.code == 0, table.err
    # 9 steps had a straggler; rank 2 in 8: 4 × P(Binomial(9, 1/4) ≥ 8) = 4 × (9 × (1/4)^8 ×
    # 3/4 + (1/4)^9) = 4 × 28/4^9 = 4.27e-4.
    assert (
        "  stragglers by step: 9 of 10 steps had a straggler; rank 2 in 8 of them, the same "
        "rank step after step (by chance 0.0004)\n"
        "    steps 1–6: rank 2 · step 7: – · step 8: rank 1 · steps 9–10: rank 2\n"
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


def late_and_often_last(tmp_path: Path) -> Path:
    """4 ranks, 8 steps of [1000 s, 1000 s + 1000) µs, each with three 1 MB all-reduces ending
    at 450, 700 and 950 µs into the step. Rank 1 arrives 70 µs late at the first (at 420; ranks
    0 and 2 at 350, rank 3 at 352); at the other two every rank arrives 100 µs before the end
    except rank 3, 2 µs after them: rank 3 is last at 16 of the 24 calls, rank 1 at 8."""
    folder = tmp_path / "job"
    folder.mkdir(parents=True)
    ends = (450, 700, 950)
    for rank in range(4):
        events: list[tb.Event] = []
        for s in range(8):
            base = 1000 * s
            events.append(tb.step(s + 1, base, 1000))
            for c, end in enumerate(ends):
                arrive = end - 100 + (2 if rank == 3 else 0)
                if c == 0 and rank == 1:
                    arrive = end - 30
                events += all_reduce(base + arrive, base + end, 3 * s + c + 1)
        tb.write(folder / f"rank{rank}.json", tb.document(events, rank=rank, world=4))
    return folder


@pytest.mark.cli
def test_the_straggler_is_the_rank_whose_lateness_costs_most_waiting(tmp_path):
    folder = late_and_often_last(tmp_path)
    loaded = traceview.load(folder)
    cross = loaded.report.cross_rank
    assert cross is not None and cross.aligned
    # Each step: at the first call ranks 0 and 2 wait 70 µs for rank 1, rank 3 68 µs (208);
    # at each of the other two ranks 0-2 wait 2 µs for rank 3 (6). Over 8 steps: rank 1 causes
    # 8 × 208 = 1,664 µs, rank 3 2 × 8 × 6 = 96 µs.
    assert [(a.rank, a.last_arrivals, a.caused_wait_ns) for a in cross.ranks] == [
        (0, 0, 0), (1, 8, 1_664_000), (2, 0, 0), (3, 16, 96_000),
    ]  # fmt: skip
    assert cross.straggler == 1
    (found,) = loaded.findings
    assert found.rule == "straggler"
    # 1,664 of all 1,760 µs waited (94.5 %); ranks 0, 2, 3 spend 100 + 100 + 98 µs in each of
    # the three calls a step, 894 µs, 7,152 over 8 steps, of which 1,664 (23.3 %) waiting for
    # rank 1. Per step the costliest late rank is rank 1 (208 against 12 µs), its calls' wait
    # share 220 / 1,124 ≥ 10 %: 8 of 8 steps.
    assert found.numbers == {
        "rank": 1, "caused_wait_ms": 1.664, "caused_share_pct": 94.5,
        "others_wait_for_it_pct": 23.3, "steps_waited_for": 8, "steps_with_a_straggler": 8,
        "recurrence": "one rank",
    }  # fmt: skip
    assert found.what.startswith("rank 1's late arrivals cost the other ranks 1.664 ms")
    assert "arrives last" not in found.what  # the count is another measure: not in the sentence
    assert "look at rank 1" in found.action
    table = cli("ranks", folder)
    assert table.code == 0, table.err
    assert "straggler: rank 1 (its late arrivals cost the others 1.664 ms of waiting, 95% of " \
        "all their waiting)" in table.out  # fmt: skip
    doc = json.loads(cli("ranks", folder, "--format", "json").out)
    assert doc["jobs"][0]["straggler"] == 1
    assert [a["caused_wait_us"] for a in doc["jobs"][0]["per_rank"]] == [0, 1664, 0, 96]
