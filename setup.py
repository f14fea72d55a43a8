"""The compiled part: traceview/parse/_scan.c, the parser's fast path. Optional: where it cannot
be built, traceview runs its pure-Python path, which gives the same results."""

import sys

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "traceview.parse._scan",
            ["traceview/parse/_scan.c"],
            # No fused multiply-add: a time is rounded as float64 arithmetic rounds it in Python.
            extra_compile_args=[
                "-O3",
                "-std=c11",
                "-Wall",
                "-Wno-missing-braces",
                "-ffp-contract=off",
            ],
            libraries=["m"] if sys.platform != "win32" else [],
            optional=True,
        )
    ]
)
