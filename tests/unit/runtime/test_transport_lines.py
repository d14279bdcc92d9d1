"""The watch stream's line splitter: whatever the chunking, the same newline-delimited documents."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from leaderworkerset.runtime.transport import lines

BIG = b'{"type":"ADDED","object":{"data":"' + b"x" * 200_000 + b'"}}'
DOCS = [b'{"type":"ADDED"}', BIG, b'{"type":"BOOKMARK"}']
STREAM = b"\n".join(DOCS) + b"\n"


def chunked(size: int) -> list[bytes]:
    return [STREAM[i : i + size] for i in range(0, len(STREAM), size)]


async def feed(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


CASES = [
    pytest.param([STREAM], DOCS, id="one chunk"),
    pytest.param(chunked(1), DOCS, id="one byte at a time"),
    pytest.param(chunked(4096), DOCS, id="a large object over many chunks"),
    pytest.param(
        [b'{"a":1}\n\n{"b":2}'], [b'{"a":1}', b'{"b":2}'], id="blank line skipped, last without newline"
    ),
    pytest.param([b"", b'{"a":1}\n'], [b'{"a":1}'], id="empty chunk"),
]


@pytest.mark.parametrize(("chunks", "want"), CASES)
async def test_lines(chunks: list[bytes], want: list[bytes]) -> None:
    assert [line async for line in lines(feed(chunks))] == want


def test_every_case_ran() -> None:
    assert len(CASES) == 5
