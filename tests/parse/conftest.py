"""Every parse test runs on both paths of the parser: the compiled scanner (where batches are
plain) and the pure-Python decoder alone."""

from __future__ import annotations

import os

import pytest

from traceview.parse import fast
from traceview.parse.fast import PURE_PYTHON_ENV


@pytest.fixture(autouse=True, params=["compiled", "pure-python"])
def parser_path(request, monkeypatch):
    monkeypatch.setenv(PURE_PYTHON_ENV, "1" if request.param == "pure-python" else "0")
    if request.param == "compiled" and not fast.available():
        # Where the scanner did not build, the "compiled" runs would test the other path again.
        message = "the compiled scanner is not built here (pip install -e . with a C compiler)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return request.param
