"""The compiled part, optional: traceview/parse/_scan.c, the parser's fast path. Where it cannot
be built, traceview runs its Python path, which gives the same results."""

import sys

from setuptools import Extension, setup

FLAGS = ["-O3", "-std=c11", "-Wall", "-Wno-missing-braces"]

setup(
    ext_modules=[
        Extension(
            "traceview.parse._scan",
            ["traceview/parse/_scan.c"],
            # No fused multiply-add: a time is rounded as float64 arithmetic rounds it in Python.
            extra_compile_args=[*FLAGS, "-ffp-contract=off"],
            libraries=["m"] if sys.platform != "win32" else [],
            optional=True,
        ),
    ]
)
