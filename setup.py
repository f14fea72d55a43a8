"""The compiled part: traceview/parse/_scan.c, the parser's fast path. Optional: where it cannot
be built, traceview runs its pure-Python path, which gives the same results."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "traceview.parse._scan",
            ["traceview/parse/_scan.c"],
            extra_compile_args=["-O3", "-std=c11", "-Wall", "-Wno-missing-braces"],
            optional=True,
        )
    ]
)
