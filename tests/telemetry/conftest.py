"""Each telemetry test leaves landed's task logger and tracing as it found them: off."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from landed.telemetry import logs, tracing


@pytest.fixture(autouse=True)
def _telemetry_off_after() -> Iterator[None]:
    yield
    tracing.shutdown()
    logger = logging.getLogger(logs.LOGGER)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    logger.setLevel(logging.NOTSET)
    logger.propagate = True
