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


def test_polars_alone_would_read_a_lone_surrogate_as_nul() -> None:
    """Why surrogate escapes take the slow path: the fast path changes them silently."""
    dtype = pl.Struct({"t": pl.String})
    assert pl.Series(['{"t": "\\ud800"}']).str.json_decode(dtype).to_list() == [{"t": "\x00"}]


def test_lone_surrogate_in_a_read_field_is_null_with_a_finding() -> None:
    text = RUN % ('"a\\ud800b"', '"ok"')
    assert _title(text) == [None]
    assert _findings(text) == [
        (
            "lone_surrogate",
            "$.run.title",
            "the string holds a lone surrogate escape (\\ud800); read as null",
        )
    ]


def test_lone_surrogate_in_a_field_never_read_is_a_finding() -> None:
    text = RUN % ('"t"', '"\\udfff"')
    assert _title(text) == ["t"]
    assert [f[:2] for f in _findings(text)] == [("lone_surrogate", "$.nodes[0].note")]


def test_lone_surrogate_in_a_member_name_drops_the_member() -> None:
    text = '{"ocp": "0.3", "run": {"id": "r1", "ext": {"\\ud800": 1}}}'
    assert _findings(text) == [
        (
            "lone_surrogate",
            '$.run.ext["\\ud800"]',
            "the member name holds a lone surrogate escape (\\ud800); the member is dropped",
        )
    ]


def test_surrogate_pair_escape_is_text_not_a_defect() -> None:
    text = RUN % ('"\\ud83d\\ude00"', '"x"')
    assert _title(text) == ["\U0001f600"]
    assert _findings(text) == []


def test_bytes_that_are_not_utf8_are_a_finding_never_a_replacement() -> None:
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


def test_bytes_that_are_not_utf8_outside_a_string_are_not_json() -> None:
    _, _, rejected, _ = sanitize('{"ocp": "0.3",\udcff "run": {}}', 0, invalid_utf8=True)
    assert isinstance(rejected, Rejected)
    assert rejected.code == "not_json"
    assert "the text also holds bytes that are not UTF-8" in rejected.message


def test_number_beyond_a_float_is_out_of_range() -> None:
    text = '{"ocp": "0.3", "run": {"id": "r1"}, "attempts": [{"cost": {"usd": -1e400}}]}'
    assert _findings(text) == [
        (
            "out_of_range",
            "$.attempts[0].cost.usd",
            "the number is beyond the range of a 64-bit float; read as null",
        )
    ]


def test_integer_beyond_64_bits_reads_as_a_number() -> None:
    """Only integer fields check the range (tables.py); a score may be any number."""
    big = "123456789012345678901234567890"
    text = '{"ocp": "0.3", "run": {"id": "r1", "signals": [{"kind": "score", "value": %s}]}}'
    dec = decode_texts([text % big])
    sig = dec.frame.get_column("doc").struct.field("run").struct.field("signals").to_list()
    assert float(sig[0][0]["value"]) == float(big)
    assert dec.findings == []


def test_nan_literal_is_not_json() -> None:
    _, _, rejected, _ = sanitize('{"ocp": "0.3", "run": {"id": "r1", "title": NaN}}', 0)
    assert rejected is not None and rejected.code == "not_json"


def test_null_element_on_the_slow_path_is_one_finding() -> None:
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


def test_repeated_member_name_keeps_its_first_value_on_both_paths() -> None:
    """polars and DuckDB keep the first value, orjson the last: the slow path follows polars."""
    fast = '{"ocp": "0.3", "run": {"id": "r1", "title": "first", "title": "second"}}'
    slow = fast.replace('"r1"', '"r1", "note": "\\ud800"')
    assert _title(fast) == ["first"]
    assert _title(slow) == ["first"]


def test_repeated_label_keeps_its_first_value() -> None:
    from ocp_analytics import read_documents

    doc = '{"ocp": "0.3", "run": {"id": "r1", "labels": {"team": "a", "team": "b", "x": "y"}}}'
    slow = doc.replace('"x": "y"', '"x": "\\ud800"')  # the bad label is reported and left out
    got = [
        read_documents([t])["runs"].collect().get_column("labels").to_list() for t in (doc, slow)
    ]
    assert got == [[{"team": "a", "x": "y"}], [{"team": "a"}]]


# --- issue 36: mistyped values on the typed path, many at a time ---------------------

DOC = (
    '{"ocp": "0.3", "run": {"id": "r1", "signals": [%s]}, '
    '"attempts": [{"id": "a1", "n": %s, "effort": %s}]}'
)
VERDICT = '{"kind": "verdict", "name": "tests", "value": %s}'
SCORE = '{"kind": "score", "name": "bench", "value": %s}'


def _paths(text: str) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """The findings of ``text`` read by the decode, and by the sanitizer alone."""
    dec = decode_texts([text])
    assert dec.rejected == [] and dec.findings == []
    got = dec.typed_findings.select("code", "json_path", "message").rows()
    want = [(f.code, f.json_path, f.message) for f in sanitize(text, 0).findings]
    return got, want


def test_mistyped_values_take_the_typed_path_with_the_sanitizers_findings() -> None:
    texts = [
        DOC % (VERDICT % "true", "1", '"high"'),  # a verdict written as a boolean
        DOC % (SCORE % '"2400"', "1", '"high"'),  # a score written as text
        DOC % (SCORE % "2400", "true", '"high"'),  # a boolean where a number is declared
        DOC % (SCORE % "2400", '"1"', '"high"'),  # a text where a number is declared
        DOC % (SCORE % "2400", "1", "3"),  # a number where a text is declared
        DOC % ("null, " + VERDICT % "false", "false", "true"),  # several, and a null element
    ]
    dec = decode_texts(texts)
    assert dec.slow_path == 0 and dec.frame.get_column("typed").all()
    for text in texts:
        got, want = _paths(text)
        assert got == want
    got, _ = _paths(texts[5])
    assert got == [
        (
            "wrong_type",
            "$.run.signals[0]",
            "expected an object, found null; the element is skipped",
        ),
        (
            "wrong_type",
            "$.attempts[0].n",
            "expected a number, found boolean; the field is read as null",
        ),
        (
            "wrong_type",
            "$.attempts[0].effort",
            "expected a string, found boolean; the field is read as null",
        ),
    ]


def _signal_values(texts: list[str]) -> list[tuple[object, ...]]:
    from ocp_analytics import read_documents

    t = read_documents(texts)
    values = t["signals"].select("value_text", "value_num", "value_json").collect().rows()
    found = t["findings"].select("doc_id", "code", "json_path").collect().rows()
    return [*values, *found]


def test_the_typed_path_keeps_each_values_json_type() -> None:
    """The signal values as read on the typed path, and as the slow path reads them."""
    values = ['"2400"', "2400", "true", '"true"', "null", '"x"', "2.50", "-0.0", '"!a"', "1e300"]
    typed = [DOC % (SCORE % v, "true", '"e"') for v in values]  # (n: true takes it there)
    slow = [t.replace('"e"', '"\\u0065"') for t in typed]  # (an escaped letter: the slow path)
    dec = decode_texts(typed)
    assert dec.slow_path == 0 and dec.frame.get_column("typed").all()
    assert decode_texts(slow).slow_path == len(slow)
    got = _signal_values(typed)
    assert got == _signal_values(slow)
    assert got[:4] == [
        ("2400", None, '"2400"'),
        ("2400", 2400.0, "2400"),
        ("true", None, "true"),
        ("true", None, '"true"'),
    ]


def test_what_the_typed_path_cannot_decode_takes_the_slow_path() -> None:
    texts = [
        DOC % (SCORE % "1e400", "true", '"e"'),  # a number beyond a 64-bit float
        DOC % (SCORE % "true", "1", '{"x": 1}'),  # an object where a text is declared
        DOC % (SCORE % '"2400"', "1", '"\\ud800"'),  # a lone surrogate escape
        DOC
        % (
            SCORE % '"2400"',
            "1",
            '"wait \\":"',
        ),  # a text that ends in an escaped quote and a colon
        DOC % (SCORE % '"\\u0032400"', "1", '"e"'),  # an escape that spells a digit
    ]
    dec = decode_texts(texts)
    assert dec.slow_path == 5
    assert dec.frame.select("slow", "typed").rows() == [(True, False)] * 5
    assert dec.typed_findings.height == 0
    codes = {(f.pos, f.code, f.json_path) for f in dec.findings}
    assert (0, "out_of_range", "$.run.signals[0].value") in codes
    assert (0, "wrong_type", "$.attempts[0].n") in codes
    assert (1, "wrong_type", "$.attempts[0].effort") in codes
    assert (2, "lone_surrogate", "$.attempts[0].effort") in codes
    assert dec.frame.get_column("pos").to_list() == [0, 1, 2, 3, 4]  # every one a run
    efforts = [d["attempts"][0]["effort"] for d in dec.frame.get_column("doc").to_list()]
    assert efforts == ["e", None, None, 'wait ":', "e"]


def test_json_whitespace_around_colons_is_read_alike() -> None:
    compact = DOC.replace(": ", ":") % (VERDICT.replace(": ", ":") % "true", "true", '"e"')
    spaced = compact.replace(":", " :\t\n ").replace('" :\t\n "0.3', '": "0.3')
    dec = decode_texts([compact, spaced])
    assert dec.slow_path == 0
    found = dec.typed_findings.select("pos", "json_path").rows()
    assert found == [(0, "$.attempts[0].n"), (1, "$.attempts[0].n")]
    docs = dec.frame.get_column("doc").to_list()
    assert docs[0] == docs[1]
