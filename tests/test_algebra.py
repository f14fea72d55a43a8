import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from traceview.algebra import (
    EMPTY,
    IntervalSet,
    clip,
    difference,
    each_minus,
    intersect,
    overlap_length,
    union,
)


def as_pairs(s: IntervalSet) -> list[tuple[int, int]]:
    return list(zip(s.starts.tolist(), s.ends.tolist(), strict=True))


def test_union_merges_overlapping_and_touching_and_drops_empty():
    u = union([5, 0, 3, 20, 30, 40], [10, 4, 6, 25, 30, 41])
    assert as_pairs(u) == [(0, 10), (20, 25), (40, 41)]
    assert u.length == 10 + 5 + 1


def test_union_of_nothing_is_empty():
    assert union([], []).length == 0
    assert len(union([3], [3])) == 0


def test_intersect_and_difference_by_hand():
    a = union([0, 20], [10, 25])
    b = union([2, 8], [6, 22])
    assert as_pairs(intersect(a, b)) == [(2, 6), (8, 10), (20, 22)]
    assert as_pairs(difference(a, b)) == [(0, 2), (6, 8), (22, 25)]
    assert as_pairs(difference(b, a)) == [(10, 20)]


def test_touching_sets_do_not_intersect():
    assert intersect(union([0], [5]), union([5], [9])).length == 0
    assert as_pairs(difference(union([0], [5]), union([5], [9]))) == [(0, 5)]


def test_operations_with_empty_sets():
    a = union([1], [4])
    assert intersect(a, EMPTY).length == 0
    assert as_pairs(difference(a, EMPTY)) == [(1, 4)]
    assert difference(EMPTY, a).length == 0


def test_clip_to_window():
    a = union([0, 20], [10, 25])
    assert as_pairs(clip(a, 5, 22)) == [(5, 10), (20, 22)]
    assert clip(a, 11, 19).length == 0


intervals = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 12)).map(lambda t: (t[0], t[0] + t[1])),
    max_size=12,
)


def covered(pairs: list[tuple[int, int]]) -> set[int]:
    return {t for s, e in pairs for t in range(s, e)}


@given(intervals, intervals)
def test_matches_unit_grid_brute_force(xs, ys):
    a = union([s for s, _ in xs], [e for _, e in xs])
    b = union([s for s, _ in ys], [e for _, e in ys])
    ca, cb = covered(xs), covered(ys)
    assert a.length == len(ca)
    assert intersect(a, b).length == len(ca & cb) == overlap_length(a, b) == overlap_length(b, a)
    assert difference(a, b).length == len(ca - cb)
    assert covered(as_pairs(union(*(np.concatenate(p) for p in zip(a, b, strict=True))))) == ca | cb


@given(intervals, st.integers(-5, 75), st.integers(0, 30))
def test_clip_matches_the_unit_grid(xs, lo, width):
    # clip reads only the intervals that reach into the window (binary search): the same set
    # as cutting every interval, for windows before, across, inside and after the set.
    a = union([s for s, _ in xs], [e for _, e in xs])
    clipped = clip(a, lo, lo + width)
    assert covered(as_pairs(clipped)) == covered(xs) & set(range(lo, lo + width))
    assert all(e > s for s, e in as_pairs(clipped))


def test_each_minus_by_hand():
    cut = union([2, 8, 30], [4, 12, 31])
    # [0, 10) loses [2, 4) and [8, 10); [9, 11) lies in a cut; [12, 20) touches one, keeps all;
    # [29, 32) loses its middle; [5, 5), empty, lies outside every cut: kept as it is;
    # [3, 3) lies in one.
    owner, lo, hi = each_minus(
        np.array([0, 9, 12, 29, 5, 3]), np.array([10, 11, 20, 32, 5, 3]), cut
    )
    assert owner.tolist() == [0, 0, 2, 3, 3, 4]
    assert list(zip(lo.tolist(), hi.tolist(), strict=True)) == [
        (0, 2),
        (4, 8),
        (12, 20),
        (29, 30),
        (31, 32),
        (5, 5),
    ]
    owner, lo, hi = each_minus(np.array([3, 4]), np.array([7, 4]), EMPTY)
    assert (owner.tolist(), lo.tolist(), hi.tolist()) == ([0, 1], [3, 4], [7, 4])


@given(intervals, intervals)
def test_each_minus_matches_difference_one_at_a_time(xs, ys):
    cut = union([y[0] for y in ys], [y[1] for y in ys])
    starts = np.array([x[0] for x in xs], np.int64)
    ends = np.array([x[1] for x in xs], np.int64)
    owner, lo, hi = each_minus(starts, ends, cut)

    def rest(s, e):
        if not any(cs < e and ce > s for cs, ce in as_pairs(cut)):
            return [(s, e)]  # no cut reaches into it: as it is, an empty one too
        return as_pairs(difference(union([s], [e]), cut))

    expected = [(i, a, b) for i, (s, e) in enumerate(xs) for a, b in rest(s, e)]
    assert list(zip(owner.tolist(), lo.tolist(), hi.tolist(), strict=True)) == expected
