"""Finding sources and reading them into document texts (``sources.py``)."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
import zstandard

from ocp_analytics.ingestion import read
from ocp_analytics.ingestion.chunks import read_chunks
from ocp_analytics.ingestion.read import ReadProblem
from ocp_analytics.ingestion.sources import STDIN, Source, find_sources

DOC = '{"ocp": "0.3", "run": {"id": "r%d"}}'


def _read(path: Path, display: str | None = None) -> tuple[list[tuple], list[ReadProblem]]:
    """(text, line, index, cut) of every document text, and the read problems."""
    data = path.read_bytes()
    src = Source(display or str(path), path, len(data), hashlib.sha256(data).hexdigest())
    problems: list[ReadProblem] = []
    out = []
    for meta, cut in read_chunks(src, 2, problems):
        for i, text in enumerate(meta.texts):
            out.append((text, meta.lines[i], meta.indexes[i], i in cut))
    return out, problems


def _docs(*ns: int) -> list[str]:
    return [DOC % n for n in ns]


def test_lf_crlf_and_cr_only_lines_are_numbered_alike(tmp_path: Path) -> None:
    for name, sep in (("lf", "\n"), ("crlf", "\r\n"), ("cr", "\r")):
        f = tmp_path / f"{name}.ndjson"
        f.write_bytes(sep.join(_docs(1, 2, 3)).encode() + sep.encode())
        got, problems = _read(f)
        assert [(t, line) for t, line, _, _ in got] == [(DOC % i, i) for i in (1, 2, 3)], name
        assert problems == []


def test_crlf_split_across_read_blocks_keeps_line_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "\r\n".join(_docs(1, 2, 3, 4)) + "\r\n"
    f = tmp_path / "a.ndjson"
    f.write_bytes(text.encode())
    monkeypatch.setattr(read, "BLOCK", len(DOC % 1) + 1)  # a block ends between CR and LF
    got, _ = _read(f)
    assert [line for _, line, _, _ in got] == [1, 2, 3, 4]
    assert [t for t, *_ in got] == _docs(1, 2, 3, 4)


def test_byte_order_mark_is_dropped(tmp_path: Path) -> None:
    (tmp_path / "a.ndjson").write_bytes(b"\xef\xbb\xbf" + "\n".join(_docs(1, 2)).encode())
    (tmp_path / "b.json").write_bytes(b"\xef\xbb\xbf" + (DOC % 3).encode())
    got, _ = _read(tmp_path / "a.ndjson")
    assert [(t, line, cut) for t, line, _, cut in got] == [(DOC % 1, 1, False), (DOC % 2, 2, True)]
    got, _ = _read(tmp_path / "b.json")
    assert [t for t, *_ in got] == [DOC % 3]


@pytest.mark.parametrize("content", ["", " \n\t\r\n"])
def test_empty_json_file_is_one_problem(tmp_path: Path, content: str) -> None:
    (tmp_path / "e.json").write_text(content)
    got, problems = _read(tmp_path / "e.json")
    assert got == []
    assert [(p.code, p.line) for p in problems] == [("empty_file", 1)]


def test_empty_ndjson_file_holds_no_document(tmp_path: Path) -> None:
    (tmp_path / "e.ndjson").write_text("")
    assert _read(tmp_path / "e.ndjson") == ([], [])


def test_stdin_is_a_stream_of_values_not_lines(tmp_path: Path) -> None:
    d1, d2, d3, d4 = (json.loads(t) for t in _docs(1, 2, 3, 4))
    text = json.dumps(d1, indent=2) + "\n" + json.dumps(d2) + "\n" + json.dumps([d3, d4], indent=1)
    f = tmp_path / "spooled"
    f.write_text(text)
    got, problems = _read(f, display=STDIN)
    assert [(json.loads(t)["run"]["id"], line, index) for t, line, index, _ in got] == [
        ("r1", 1, None),
        ("r2", 7, None),
        ("r3", 8, 0),
        ("r4", 8, 1),
    ]
    assert problems == []


def test_stdin_value_that_never_closes_does_not_swallow_the_next(tmp_path: Path) -> None:
    f = tmp_path / "spooled"
    f.write_text('{"ocp": "0.3", "run": \n' + DOC % 2 + "\n" + DOC % 3 + "\n")
    got, _ = _read(f, display=STDIN)
    assert [(t, line, cut) for t, line, _, cut in got] == [
        ('{"ocp": "0.3", "run":', 1, False),
        (DOC % 2, 2, False),
        (DOC % 3, 3, False),
    ]


def test_stdin_cut_inside_a_value_is_marked_cut(tmp_path: Path) -> None:
    f = tmp_path / "spooled"
    f.write_text(DOC % 1 + '\n{\n  "ocp": "0.3",\n')
    got, _ = _read(f, display=STDIN)
    assert [(line, cut) for _, line, _, cut in got] == [(1, False), (2, True)]


def test_json_file_of_concatenated_pretty_documents(tmp_path: Path) -> None:
    d1, d2 = (json.loads(t) for t in _docs(1, 2))
    (tmp_path / "two.json").write_text(json.dumps(d1, indent=2) + json.dumps(d2, indent=2))
    got, problems = _read(tmp_path / "two.json")
    # the second starts on the first one's last line: "}{"
    assert [(json.loads(t)["run"]["id"], line) for t, line, _, _ in got] == [("r1", 1), ("r2", 6)]
    assert problems == []


def _ndjson(n: int) -> bytes:
    return "".join(DOC % i + "\n" for i in range(n)).encode()


def test_truncated_gzip_keeps_complete_lines(tmp_path: Path) -> None:
    gz = gzip.compress(_ndjson(3), mtime=0)
    (tmp_path / "a.ndjson.gz").write_bytes(gz[:-8])  # the trailer (CRC, size) is cut
    got, problems = _read(tmp_path / "a.ndjson.gz")
    assert [t for t, *_ in got] == _docs(0, 1, 2)
    assert [(p.code, p.line) for p in problems] == [("truncated", 4)]
    assert problems[0].message == (
        f"the gzip stream ends at byte {len(gz) - 8} of the file (decompressed byte 108) "
        "before its end marker; the documents after the cut are lost"
    )


def test_gzip_members_and_zero_padding_are_read(tmp_path: Path) -> None:
    data = gzip.compress(_ndjson(2), mtime=0) + gzip.compress(b"".join([(DOC % 9).encode()]))
    (tmp_path / "a.ndjson.gz").write_bytes(data + bytes(512))
    got, problems = _read(tmp_path / "a.ndjson.gz")
    assert [t for t, *_ in got] == _docs(0, 1, 9)
    assert problems == []


def test_zstd_frames_are_read_and_junk_after_them_is_a_problem(tmp_path: Path) -> None:
    z = zstandard.ZstdCompressor()
    data = z.compress(_ndjson(1)) + z.compress((DOC % 5 + "\n").encode())
    (tmp_path / "a.ndjson.zst").write_bytes(data + b"junk")
    got, problems = _read(tmp_path / "a.ndjson.zst")
    assert [t for t, *_ in got] == _docs(0, 5)
    assert [(p.code, p.line, p.head) for p in problems] == [("trailing_garbage", 3, "junk")]


def test_compressed_file_without_suffix_is_sniffed(tmp_path: Path) -> None:
    (tmp_path / "a.ndjson").write_bytes(gzip.compress(_ndjson(2)))
    got, problems = _read(tmp_path / "a.ndjson")
    assert ([t for t, *_ in got], problems) == (_docs(0, 1), [])


def test_plain_file_named_gz_is_not_compressed_not_truncated(tmp_path: Path) -> None:
    (tmp_path / "a.ndjson.gz").write_bytes(_ndjson(2))
    got, problems = _read(tmp_path / "a.ndjson.gz")
    assert got == []
    assert [(p.code, p.line) for p in problems] == [("not_compressed", 1)]


def test_bytes_that_are_not_utf8_are_kept_for_the_decoder(tmp_path: Path) -> None:
    (tmp_path / "a.ndjson").write_bytes(b'{"run": {"id": "r\xff"}}\n')
    data = (tmp_path / "a.ndjson").read_bytes()
    src = Source("a", tmp_path / "a.ndjson", len(data), "x")
    [(meta, _)] = list(read_chunks(src, 10, []))
    assert list(meta.texts) == ['{"run": {"id": "r\ufffd"}}']  # a display copy only
    assert meta.raw == {0: '{"run": {"id": "r\udcff"}}'}
    assert meta.data(0) == data.rstrip(b"\n")


def test_one_file_spelled_three_ways_is_one_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.ndjson").write_text(DOC % 1 + "\n")
    monkeypatch.chdir(tmp_path)
    found = find_sources(["a.ndjson", "./a.ndjson", str(tmp_path / "a.ndjson"), "."])
    assert [(s.path, s.resolved) for s in found] == [("a.ndjson", str(tmp_path / "a.ndjson"))]


def test_sources_are_keyed_by_their_resolved_paths_through_links(tmp_path: Path) -> None:
    real = tmp_path.resolve() / "real"
    (real / "sub").mkdir(parents=True)
    for name in ("a.json", "sub/b.json", "c.json"):
        (real / name).write_text(DOC % 1)
    (tmp_path / "linked").symlink_to(real)  # a folder reached through a link
    (real / "sub" / "to-c.json").symlink_to(real / "c.json")  # a file that is a link
    found = find_sources([tmp_path / "linked" / "sub", tmp_path / "linked" / "a.json"])
    assert [(Path(s.path).relative_to(tmp_path).as_posix(), s.resolved) for s in found] == [
        ("linked/sub/b.json", str(real / "sub" / "b.json")),
        ("linked/sub/to-c.json", str(real / "c.json")),
        ("linked/a.json", str(real / "a.json")),
    ]
    assert [s.resolved for s in found] == [str(Path(s.path).resolve()) for s in found]


def test_empty_folder_is_no_source(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("not a document")
    assert find_sources([tmp_path / "empty"]) == []


def test_json_array_orjson_refuses_is_cut_into_its_elements(tmp_path: Path) -> None:
    elements = [DOC % 1, '{"run": {"id": "r\\ud800"}}', '{"run": {"id": "r\xff"}}', DOC % 4]
    body = b"[\n" + ",\n".join(elements).encode("utf-8", "surrogateescape") + b"\n]\n"
    (tmp_path / "a.json").write_bytes(body.replace("\xff".encode(), b"\xff"))
    data = (tmp_path / "a.json").read_bytes()
    src = Source("a.json", tmp_path / "a.json", len(data), "x")
    [(meta, _)] = list(read_chunks(src, 10, []))
    assert list(meta.texts) == [DOC % 1, elements[1], '{"run": {"id": "r\ufffd"}}', DOC % 4]
    assert meta.indexes == [0, 1, 2, 3]
    assert meta.raw == {2: '{"run": {"id": "r\udcff"}}'}


def test_bytes_that_are_not_utf8_in_a_json_file(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_bytes(b'{"run": {"id": "r1", "title": "\xc3"}}')
    data = (tmp_path / "a.json").read_bytes()
    [(meta, _)] = list(read_chunks(Source("a.json", tmp_path / "a.json", len(data), "x"), 9, []))
    assert meta.raw == {0: '{"run": {"id": "r1", "title": "\udcc3"}}'}


def test_file_name_that_is_not_utf8_is_shown_escaped(tmp_path: Path) -> None:
    import os

    name = os.fsdecode(b"caf\xe9.ndjson")
    (tmp_path / name).write_text(DOC % 1 + "\n")
    [src] = find_sources([tmp_path])
    assert src.path == str(tmp_path) + "/caf\\xe9.ndjson"
    assert src.resolved == str(tmp_path.resolve()) + "/caf\\xe9.ndjson"
    assert src.file == tmp_path / name
