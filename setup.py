"""The one compiled part of landed: the duplicate-key prefilter (src/landed/util/_dupscan.c).
Everything else is configured in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("landed.util._dupscan", ["src/landed/util/_dupscan.c"], optional=False),
    ]
)
