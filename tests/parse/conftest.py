"""Every parse test runs on both paths of the parser: the compiled scanner (where batches are
plain) and the pure-Python decoder alone."""

from __future__ import annotations

import pytest

from traceview.parse.fast import PURE_PYTHON_ENV


@pytest.fixture(autouse=True, params=["compiled", "pure-python"])
def parser_path(request, monkeypatch):
    monkeypatch.setenv(PURE_PYTHON_ENV, "1" if request.param == "pure-python" else "0")
    return request.param
