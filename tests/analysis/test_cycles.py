"""A rank's profiling cycles summed (analysis/cycles.py): answers by hand."""

from traceview.analysis.breakdown import Breakdown
from traceview.analysis.cycles import _summed


def b(start, end, compute, comm, overlap):
    return Breakdown(start_ns=start, end_ns=end, compute_ns=compute, comm_ns=comm,
                     overlap_ns=overlap, exposed_comm_ns=comm - overlap,
                     compute_only_ns=compute - overlap,
                     idle_ns=(end - start) - (compute + comm - overlap))  # fmt: skip


def test_cycles_sum_and_the_time_between_them_is_a_gap():
    # Cycle one [0, 100): compute 60, comm 30, 10 of it hidden -> idle 20.
    # Cycle two [400, 450): compute 20, comm 20, none hidden -> idle 10.
    total = _summed([b(400, 450, 20, 20, 0), b(0, 100, 60, 30, 10)])
    assert total is not None
    assert (total.start_ns, total.end_ns, total.gaps_ns) == (0, 450, 300)
    assert total.window_ns == 150  # 100 + 50: the 300 ns between cycles was not profiled
    assert (total.compute_ns, total.comm_ns, total.overlap_ns) == (80, 50, 10)
    assert (total.exposed_comm_ns, total.idle_ns) == (40, 30)
    assert total.compute_ns + total.exposed_comm_ns + total.idle_ns == total.window_ns


def test_an_unknown_figure_in_one_cycle_is_unknown_in_the_sum():
    unknown = Breakdown(start_ns=200, end_ns=300, compute_ns=50, comm_ns=None, overlap_ns=None,
                        exposed_comm_ns=None, compute_only_ns=None, idle_ns=None)  # fmt: skip
    total = _summed([b(0, 100, 60, 30, 10), unknown])
    assert total is not None and total.compute_ns == 110
    assert total.comm_ns is None and total.idle_ns is None and total.window_ns == 200
