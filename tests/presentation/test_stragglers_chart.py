"""The stragglers-by-step chart's frame: one point per step, or beyond MAX_POINTS runs of
consecutive steps drawn as their most frequent straggler."""

from __future__ import annotations

from traceview.documents import structs as d
from traceview.presentation import stragglers


def of(ranks: list[int | None]) -> d.Stragglers:
    steps = [
        d.StepStragglerJson(step=i + 1, collectives=1, wait_share=0.5, rank=r,
                        last_at=1 if r is not None else 0, caused_us=100.0 * (i % 3))
        for i, r in enumerate(ranks)
    ]  # fmt: skip
    return d.Stragglers(verdict="undecided", rank=None, steps_waited_for=0,
                        steps_with_a_straggler=0, ranks_waited_for=0, chance=None,
                        per_step=steps)  # fmt: skip


def test_a_point_per_step_with_a_straggler():
    frame, per_point = stragglers.straggler_frame(of([3, None, 1]))
    assert per_point == 1
    assert frame.select("step", "rank", "wait_pct", "caused_ms").rows() == [
        (1, 3, 50.0, 0.0), (3, 1, 50.0, 0.2),
    ]  # fmt: skip


def test_many_steps_are_drawn_as_runs_of_their_most_frequent_straggler(monkeypatch):
    monkeypatch.setattr(stragglers, "MAX_POINTS", 2)
    # Five steps with a straggler over two points: runs of 3 (ranks 4, 4, 2 → rank 4 in 2 of
    # them, from step 1) and the rest (ranks 7, 7 → rank 7 in both, from step 5).
    frame, per_point = stragglers.straggler_frame(of([4, 4, None, 2, 7, 7]))
    assert per_point == 3
    assert frame.select("step", "rank", "steps").rows() == [(1, 4, 2), (5, 7, 2)]
    assert "3 consecutive steps" in stragglers.binned_words(per_point)
