"""The critical path's chase (analysis/path_walk.py `_chase`): the same chains, in the same order,
whether the steps are chased side by side or one piece at a time, against the plain loop."""

from __future__ import annotations

import numpy as np
import pytest

from traceview.analysis import path_walk


def chased_one_by_one(firsts, begins, pred, end):
    """The definition: from each step's first piece through the predecessors, while the piece
    ends after the step's start."""
    chains, lengths = [], []
    for i, begin in zip(firsts.tolist(), begins.tolist(), strict=True):
        chain = []
        while i >= 0 and end[i] > begin:
            chain.append(i)
            i = int(pred[i])
        chains += chain
        lengths.append(len(chain))
    return chains, lengths


@pytest.mark.parametrize("together_above", [0, 32, 10**9])  # side by side, both, one by one
@pytest.mark.parametrize(
    ("steps", "pieces"),
    [(0, 5), (1, 2_000), (5, 3_000), (40, 4_000), (300, 3_000), (5_000, 20_000)],
)
def test_chains_are_those_of_the_plain_loop(monkeypatch, steps, pieces, together_above):
    monkeypatch.setattr(path_walk, "CHASED_TOGETHER_ABOVE", together_above)
    rng = np.random.default_rng(steps * 7 + pieces)
    end = np.sort(rng.integers(0, 10 * pieces, pieces)).astype(np.int64)
    # Each piece's predecessor lies before it, or there is none (-1); a few chains run long.
    back = rng.geometric(0.3, pieces)
    back[rng.random(pieces) < 0.05] = 1
    pred = np.arange(pieces, dtype=np.int64) - back
    pred[rng.random(pieces) < 0.02] = -1
    pred[pred < 0] = -1
    firsts = rng.integers(-1, pieces, steps).astype(np.int64)
    begins = (end[np.maximum(firsts, 0)] - rng.integers(0, 200 * 10, steps)).astype(np.int64)
    chained, lengths = path_walk._chase(firsts, begins, pred, end)
    want_chains, want_lengths = chased_one_by_one(firsts, begins, pred, end)
    assert lengths.tolist() == want_lengths
    assert chained.tolist() == want_chains
    assert sum(want_lengths) > 0 or steps == 0  # chains were chased


def test_a_piece_ending_at_the_step_start_ends_the_chain():
    # Pieces 0..3 end at 10, 20, 30, 40, each the predecessor of the next; a step starting at
    # 20 keeps 3, 2 (ending 40, 30) and stops at 1 (ends at 20, not after it).
    end = np.array([10, 20, 30, 40], dtype=np.int64)
    pred = np.array([-1, 0, 1, 2], dtype=np.int64)
    chained, lengths = path_walk._chase(np.array([3, 3, -1]), np.array([20, 0, 0]), pred, end)
    assert lengths.tolist() == [2, 4, 0]
    assert chained.tolist() == [3, 2, 3, 2, 1, 0]
