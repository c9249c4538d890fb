"""NDJSON read in place (spans of a block) or line by line: always the same texts.

The reader keeps the lines of a block holding no ``\\r`` where they lie
(``sources._Span``, Arrow string views over the block); other blocks, texts
that are not UTF-8 and blank or padded lines take the per-line path. Any
mix of them must read each line as the plain rule below does.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, event, given, settings

from ocp_analytics.ingestion import read
from ocp_analytics.ingestion.chunks import read_chunks
from ocp_analytics.ingestion.read import BOM
from ocp_analytics.ingestion.sources import Source
from tests.conftest import examples

_PIECES = st.sampled_from(
    [
        b'{"ocp":"0.3","run":{"id":"r1"}}',  # longer than an inline view (12 bytes)
        b"{}",
        b'"short"',  # exactly 7 bytes
        b"123456789012",  # 12 bytes: the longest inline view
        b"1234567890123",  # 13 bytes: the shortest view into the buffer
        '{"t":"caf\u00e9 \u2713"}'.encode(),  # valid UTF-8, not ASCII
        b'{"bad":"\xff\xfe"}',  # not UTF-8
        b" ",
        b"\t",
        b"",
        b"x" * 40,
    ]
)
_ENDS = st.sampled_from([b"\n", b"\n", b"\n", b"\r\n", b"\r"])


@st.composite
def _files(draw: st.DrawFn) -> tuple[bytes, int, int]:
    lines = draw(st.lists(st.lists(_PIECES, max_size=3).map(b"".join), max_size=25))
    ends = [draw(_ENDS) for _ in lines]
    body = b"".join(line + end for line, end in zip(lines, ends, strict=True))
    if lines and draw(st.booleans()):  # the last line unterminated
        body = body[: -len(ends[-1])]
    if draw(st.booleans()):
        body = BOM + body
    return body, draw(st.integers(1, 64)), draw(st.integers(1, 6))


def _expected(body: bytes) -> list[tuple[str, int, bool, str | None, bytes]]:
    """(text, line, cut, raw text, bytes) of each document, by the plain rule."""
    body = body.removeprefix(BOM)
    pieces = re.split(rb"\r\n|\r|\n", body)
    terminated = [True] * len(pieces)
    if pieces and pieces[-1] == b"":
        pieces.pop()
    elif pieces:
        terminated[-1] = False
    out = []
    for n, piece in enumerate(pieces, start=1):
        data = piece.strip(b" \t")
        if not data:
            continue
        try:
            text, raw = data.decode(), None
        except UnicodeDecodeError:
            text, raw = data.decode("utf-8", "replace"), data.decode("utf-8", "surrogateescape")
        out.append((text, n, not terminated[n - 1], raw, data))
    return out


@settings(
    max_examples=examples(400),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=_files())
def test_lines_read_in_place_are_the_lines_read_one_by_one(
    case: tuple[bytes, int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body, block, size = case
    monkeypatch.setattr(read, "BLOCK", block)
    path = tmp_path / "a.ndjson"
    path.write_bytes(body)
    src = Source("a.ndjson", path, len(body), hashlib.sha256(body).hexdigest())
    problems: list[read.ReadProblem] = []
    got = []
    chunks = list(read_chunks(src, size, problems))
    for meta, cut in chunks:
        for i, text in enumerate(meta.texts):
            data = meta.data(i)
            assert meta.sha256([i]) == [hashlib.sha256(data).hexdigest()]
            got.append((text, meta.lines[i], i in cut, meta.raw.get(i), data))
        assert meta.indexes == [None] * len(meta.texts)
    assert problems == []
    assert got == _expected(body)
    assert [len(m.texts) for m, _ in chunks[:-1]] == [size] * (len(chunks) - 1)
    event("in place" if b"\r" not in body else "CR somewhere")
