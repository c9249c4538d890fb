"""Decoding document texts: the fast path, the slow path, and what routes a text there."""

from __future__ import annotations

import polars as pl

from ocp_analytics.ingestion.decode import decode_texts
from ocp_analytics.ingestion.sanitize import Finding, Rejected, sanitize

RUN = '{"ocp": "0.3", "run": {"id": "r1", "title": %s}, "nodes": [{"note": %s}]}'


def _findings(text: str, **kw: object) -> list[tuple[str, str, str]]:
    dec = decode_texts([text], **kw)  # type: ignore[arg-type]
    assert dec.rejected == []
    return [(f.code, f.json_path, f.message) for f in dec.findings]


def _title(text: str, **kw: object) -> object:
    dec = decode_texts([text], **kw)  # type: ignore[arg-type]
    return dec.frame.get_column("doc").struct.field("run").struct.field("title").to_list()


def test_issue9_polars_alone_would_read_a_lone_surrogate_as_nul() -> None:
    """Why surrogate escapes take the slow path: the fast path changes them silently."""
    dtype = pl.Struct({"t": pl.String})
    assert pl.Series(['{"t": "\\ud800"}']).str.json_decode(dtype).to_list() == [{"t": "\x00"}]


def test_issue9_lone_surrogate_in_a_read_field_is_null_with_a_finding() -> None:
    text = RUN % ('"a\\ud800b"', '"ok"')
    assert _title(text) == [None]
    assert _findings(text) == [
        (
            "lone_surrogate",
            "$.run.title",
            "the string holds a lone surrogate escape (\\ud800); read as null",
        )
    ]


def test_issue9_lone_surrogate_in_a_field_never_read_is_a_finding() -> None:
    text = RUN % ('"t"', '"\\udfff"')
    assert _title(text) == ["t"]
    assert [f[:2] for f in _findings(text)] == [("lone_surrogate", "$.nodes[0].note")]


def test_issue9_lone_surrogate_in_a_member_name_drops_the_member() -> None:
    text = '{"ocp": "0.3", "run": {"id": "r1", "ext": {"\\ud800": 1}}}'
    assert _findings(text) == [
        (
            "lone_surrogate",
            '$.run.ext["\\ud800"]',
            "the member name holds a lone surrogate escape (\\ud800); the member is dropped",
        )
    ]


def test_issue9_surrogate_pair_escape_is_text_not_a_defect() -> None:
    text = RUN % ('"\\ud83d\\ude00"', '"x"')
    assert _title(text) == ["\U0001f600"]
    assert _findings(text) == []


def test_issue9_bytes_that_are_not_utf8_are_a_finding_never_a_replacement() -> None:
    shown = RUN % ('"caf\ufffd"', '"x"')
    raw = RUN % ('"caf\udce9"', '"x"')  # byte 0xE9 as read by the reader
    assert _title(shown, raw={0: raw}) == [None]
    assert _findings(shown, raw={0: raw}) == [
        (
            "invalid_utf8",
            "$.run.title",
            "the string holds bytes that are not UTF-8 (0xe9); read as null",
        )
    ]


def test_issue9_bytes_that_are_not_utf8_outside_a_string_are_not_json() -> None:
    _, _, rejected, _ = sanitize('{"ocp": "0.3",\udcff "run": {}}', 0, invalid_utf8=True)
    assert isinstance(rejected, Rejected)
    assert rejected.code == "not_json"
    assert "the text also holds bytes that are not UTF-8" in rejected.message


def test_issue9_number_beyond_a_float_is_out_of_range() -> None:
    text = '{"ocp": "0.3", "run": {"id": "r1"}, "attempts": [{"cost": {"usd": -1e400}}]}'
    assert _findings(text) == [
        (
            "out_of_range",
            "$.attempts[0].cost.usd",
            "the number is beyond the range of a 64-bit float; read as null",
        )
    ]


def test_issue9_integer_beyond_64_bits_reads_as_a_number() -> None:
    """Only integer fields check the range (tables.py); a score may be any number."""
    big = "123456789012345678901234567890"
    text = '{"ocp": "0.3", "run": {"id": "r1", "signals": [{"kind": "score", "value": %s}]}}'
    dec = decode_texts([text % big])
    sig = dec.frame.get_column("doc").struct.field("run").struct.field("signals").to_list()
    assert float(sig[0][0]["value"]) == float(big)
    assert dec.findings == []


def test_issue9_nan_literal_is_not_json() -> None:
    _, _, rejected, _ = sanitize('{"ocp": "0.3", "run": {"id": "r1", "title": NaN}}', 0)
    assert rejected is not None and rejected.code == "not_json"


def test_issue9_null_element_on_the_slow_path_is_one_finding() -> None:
    text = '{"ocp": "0.3", "run": {"id": "r1", "signals": [null, true]}}'
    clean, findings, rejected, _ = sanitize(text, 3)
    assert rejected is None and clean is not None
    assert findings == [
        Finding(
            3,
            "wrong_type",
            "$.run.signals[0]",
            "expected an object, found null; the element is skipped",
        ),
        Finding(
            3,
            "wrong_type",
            "$.run.signals[1]",
            "expected an object, found boolean; the field is read as null",
        ),
    ]


def test_issue9_repeated_member_name_keeps_its_first_value_on_both_paths() -> None:
    """polars and DuckDB keep the first value, orjson the last: the slow path follows polars."""
    fast = '{"ocp": "0.3", "run": {"id": "r1", "title": "first", "title": "second"}}'
    slow = fast.replace('"r1"', '"r1", "note": "\\ud800"')
    assert _title(fast) == ["first"]
    assert _title(slow) == ["first"]


def test_issue9_repeated_label_keeps_its_first_value() -> None:
    from ocp_analytics import read_documents

    doc = '{"ocp": "0.3", "run": {"id": "r1", "labels": {"team": "a", "team": "b", "x": "y"}}}'
    slow = doc.replace('"x": "y"', '"x": "\\ud800"')  # the bad label is reported and left out
    got = [
        read_documents([t])["runs"].collect().get_column("labels").to_list() for t in (doc, slow)
    ]
    assert got == [[{"team": "a", "x": "y"}], [{"team": "a"}]]
