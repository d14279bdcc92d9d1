"""The recording HTTP server of tests/unit/runtime/wire.py as a fixture."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.unit.runtime.wire import Recorded, serving


@pytest.fixture
async def recorded() -> AsyncIterator[Recorded]:
    async with serving() as server:
        yield server
