import pytest

from traceview.algebra import union
from traceview.analysis import breakdown


def test_definitions_on_a_hand_computed_window():
    # compute [0,10) [20,30); comm [5,25); window [0,40)
    b = breakdown(union([0, 20], [10, 30]), union([5], [25]), 0, 40)
    assert (b.compute_ns, b.comm_ns) == (20, 20)
    assert b.overlap_ns == 10  # [5,10) + [20,25)
    assert b.exposed_comm_ns == 10  # [10,20)
    assert b.compute_only_ns == 10  # [0,5) + [25,30)
    assert b.idle_ns == 40 - 30  # C ∪ M = [0,30)
    assert b.overlap_pct == pytest.approx(50.0)
    assert b.window_ns == 40


def test_overlap_pct_is_undefined_without_communication():
    b = breakdown(union([0], [10]), union([], []), 0, 10)
    assert b.comm_ns == 0
    assert b.overlap_pct is None
    assert b.idle_ns == 0


def test_intervals_are_clipped_to_the_window():
    b = breakdown(union([0], [100]), union([90], [150]), 50, 120)
    assert (b.compute_ns, b.comm_ns, b.overlap_ns) == (50, 30, 10)
    assert b.exposed_comm_ns == 20
    assert b.idle_ns == 0
