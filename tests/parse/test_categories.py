"""fold(): Kineto's category names, as written over the years, onto the events table's set."""

from __future__ import annotations

import polars as pl
import pytest

from traceview.parse.categories import CATEGORY, category, fold, folded


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("kernel", "kernel"),
        ("Kernel", "kernel"),  # older traces capitalise
        ("gpu_memcpy", "memcpy"),
        ("Memset", "memset"),
        ("cuda_driver", "runtime"),
        ("Runtime", "runtime"),
        ("operator", "cpu_op"),  # the old name of cpu_op
        ("gpu_user_annotation", "gpu_annotation"),
        ("python_function", "python"),
        # Kineto's accelerators' names, aliases of the common ones (ActivityType.h)
        ("mtia_ccp_events", "kernel"),
        ("mtia_runtime", "runtime"),
        ("xpu_runtime", "runtime"),
        ("PrivateUse1_Runtime", "runtime"),
        ("collective_comm", "collective"),  # XPU's oneCCL collectives, recorded by the runtime
        ("xpu_kernel", "accelerator"),  # another accelerator's kernels
        ("ac2g", "other"),
        ("", "other"),
    ],
)
def test_each_name_folds_onto_its_category(written, expected):
    assert fold(written) == expected


def test_a_column_folds_as_its_names_do_and_an_empty_one_keeps_the_type():
    written = ["Kernel", "cpu_op", "xpu_kernel", "Kernel"]
    frame = pl.DataFrame({"cat": written}, schema={"cat": pl.Categorical()})
    out = frame.select(category(pl.col("cat"), written))["cat"]
    assert out.dtype == CATEGORY
    assert out.to_list() == ["kernel", "cpu_op", "accelerator", "kernel"]
    assert folded(written).to_list() == out.to_list()
    empty = pl.DataFrame({"cat": []}, schema={"cat": pl.Categorical()})
    assert empty.select(category(pl.col("cat"), []))["cat"].dtype == CATEGORY
