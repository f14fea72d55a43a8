"""The text tables' alignment: a table given a column at a time reads as the same table given a
row at a time (the step table of a CPU trace is made by columns: 100,000s of steps)."""

from __future__ import annotations

from traceview.cli.reporters.common import aligned, aligned_columns


def test_a_table_by_columns_is_the_table_by_rows():
    head = ("step", "window ms", "overlap %")
    rows = [
        ["1", "1,234.500", "-"],
        ["before first step", "0.001", "100.0"],
        ["12", "7.250", "5.0"],
    ]
    columns = [list(column) for column in zip(*rows, strict=True)]
    assert aligned_columns(head, columns) == aligned([list(head), *rows])
    assert aligned_columns(head, columns)[1] == "                  1  1,234.500          -"


def test_headings_wider_than_every_cell_set_the_width():
    assert aligned_columns(("a long heading", "x"), [["1"], ["2"]]) == [
        "  a long heading  x",
        "               1  2",
    ]
