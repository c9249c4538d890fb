"""Fuzz the ingest with mutated documents: nothing aborts it, nothing vanishes (issue 9).

Each example writes a few generated documents, mutated, as one NDJSON file
(one document a line) and ingests it. Mutations: delete a member, retype a
value, repeat a member name, cut the text at a random byte, inject a lone
surrogate escape, bytes that are not UTF-8 or a number beyond a float into a
string anywhere in the document, targeted defects in fields the package
reads, and signal values of the wrong JSON type (issue 36: read on the typed
path, many documents at a time). Asserted for every example:

* no exception;
* documents read = runs written + quarantined, and = the lines written;
* every injected defect is visible: the document is quarantined, or a
  finding with the expected code (and, where it is unambiguous, the exact
  JSON path) is on its line.
"""

from __future__ import annotations

import copy
import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
from hypothesis import HealthCheck, given, settings

import ocp_analytics as oa
from benchmarks.generate import generate_documents
from ocp_analytics.ingestion.sanitize import member_path

POOL = list(generate_documents(16, seed=91))
Key = str | int


@dataclass
class Expect:
    """A defect that must be visible: one of ``codes`` (at ``path`` when given).

    ``marker`` (text put in the document) or ``keys`` and ``value`` (a value
    set in it) tell whether a later mutation undid the defect.
    """

    codes: frozenset[str]
    path: str | None = None
    marker: str | None = None
    keys: tuple[Key, ...] | None = None
    value: Any = None

    def holds(self, doc: Any) -> bool:
        if self.marker is not None:
            return self.marker in json.dumps(doc)
        if self.keys is not None:
            return _has(doc, self.keys) and _get(doc, self.keys) == self.value
        return True


@dataclass
class Mutant:
    doc: dict[str, Any]
    marks: dict[str, bytes] = field(default_factory=dict)  # '"marker"' -> bytes
    expects: list[Expect] = field(default_factory=list)
    quarantine_only: bool = False  # cut: it must be quarantined
    cut: float | None = None


def _path(keys: tuple[Key, ...]) -> str:
    out = "$"
    for k in keys:
        out = f"{out}[{k}]" if isinstance(k, int) else member_path(out, k)
    return out


def _nodes(value: Any, keys: tuple[Key, ...] = ()) -> list[tuple[tuple[Key, ...], Any]]:
    """Every (path, value) below the top level, containers included."""
    out: list[tuple[tuple[Key, ...], Any]] = []
    if isinstance(value, dict | list):
        items: Any = value.items() if isinstance(value, dict) else enumerate(value)
        for k, v in items:
            out.append(((*keys, k), v))
            out += _nodes(v, (*keys, k))
    return out


def _get(doc: Any, keys: tuple[Key, ...]) -> Any:
    for k in keys:
        doc = doc[k]
    return doc


def _set(doc: Any, keys: tuple[Key, ...], value: Any) -> None:
    _get(doc, keys[:-1])[keys[-1]] = value


def _has(doc: Any, keys: tuple[Key, ...]) -> bool:
    try:
        _get(doc, keys)
    except (KeyError, IndexError, TypeError):
        return False
    return True


# --- mutations (each draws what it needs and edits the mutant) -------------------

KEY_PATHS = {("run",): "missing_run", ("run", "id"): "missing_run_id", ("ocp",): "unknown_version"}


def delete(m: Mutant, data: st.DataObject) -> None:
    nodes = [k for k, _ in _nodes(m.doc) if isinstance(k[-1], str)]
    if not nodes:
        return
    keys = data.draw(st.sampled_from(nodes))
    del _get(m.doc, keys[:-1])[keys[-1]]
    if keys in KEY_PATHS:  # (a later mutation cannot bring it back)
        m.expects.append(Expect(frozenset({KEY_PATHS[keys]})))


RETYPES = [None, True, 7, -2.5, "text", [], {"x": 1}, 10**30, 1e30]


def retype(m: Mutant, data: st.DataObject) -> None:
    """Any value anywhere becomes another type: only robustness is asserted."""
    nodes = [k for k, _ in _nodes(m.doc)]
    if nodes:
        _set(m.doc, data.draw(st.sampled_from(nodes)), data.draw(st.sampled_from(RETYPES)))


def repeat_name(m: Mutant, data: st.DataObject) -> None:
    """A member name written twice (its first value is read, see test_decode)."""
    objects = [k for k, v in _nodes(m.doc) if isinstance(v, dict) and v]
    if not objects:
        return
    obj = _get(m.doc, data.draw(st.sampled_from(objects)))
    name = data.draw(st.sampled_from(sorted(obj)))
    marker = f"@@dup{len(m.marks)}@@"
    obj[marker] = data.draw(st.sampled_from(RETYPES))
    m.marks[json.dumps(marker)] = json.dumps(name).encode()


def _read(keys: tuple[Key, ...]) -> bool:
    """Not inside a repeated member's later value (ignored: the first value is read)."""
    return not any(isinstance(k, str) and k.startswith("@@dup") for k in keys)


BAD_TEXT = {
    "lone_surrogate": [b'"\\ud800"', b'"a\\udfffb"', b'"\\udc00\\ud800"'],
    "invalid_utf8": [b'"\xff"', b'"caf\xe9"', b'"\xed\xa0\x80"', b'"a\xc3"'],
}


def bad_string(m: Mutant, data: st.DataObject) -> None:
    """A string anywhere (read by the package or not) becomes unreadable text."""
    strings = [k for k, v in _nodes(m.doc) if isinstance(v, str) and _read(k)]
    if not strings:
        return
    keys = data.draw(st.sampled_from(strings))
    code = data.draw(st.sampled_from(sorted(BAD_TEXT)))
    marker = f"@@bad{len(m.marks)}@@"
    _set(m.doc, keys, marker)
    m.marks[json.dumps(marker)] = data.draw(st.sampled_from(BAD_TEXT[code]))
    m.expects.append(Expect(frozenset({code}), _path(keys), marker=marker))


def huge_number(m: Mutant, data: st.DataObject) -> None:
    """A number anywhere becomes 1e400 (beyond a 64-bit float)."""
    numbers = [
        k
        for k, v in _nodes(m.doc)
        if isinstance(v, int | float) and not isinstance(v, bool) and _read(k)
    ]
    if not numbers:
        return
    keys = data.draw(st.sampled_from(numbers))
    marker = f"@@num{len(m.marks)}@@"
    _set(m.doc, keys, marker)
    m.marks[json.dumps(marker)] = b"-1e400" if data.draw(st.booleans()) else b"1e400"
    m.expects.append(Expect(frozenset({"out_of_range"}), _path(keys), marker=marker))


# Targeted defects in fields the package reads: (path, value, code, exact path).
TARGETS: list[tuple[tuple[Key, ...], Any, str]] = [
    (("attempts", 0, "n"), "one", "wrong_type"),
    (("attempts", 0, "n"), 1e30, "out_of_range"),
    (("attempts", 0, "n"), 2.5, "not_integer"),
    (("attempts", 0, "n"), True, "wrong_type"),  # issue 36: the typed path
    (("attempts", 0, "effort"), 3, "wrong_type"),
    (("attempts", 0, "round"), 10**30, "out_of_range"),
    (("attempts", 0, "cost", "output_tokens"), 2**64 + 1, "out_of_range"),
    (("attempts", 0, "outcome", "result"), "meh", "unknown_enum"),
    (("attempts", 1), None, "wrong_type"),
    (("run", "signals", 0), None, "wrong_type"),
    (("run", "signals", 1), "oops", "wrong_type"),
    (("run", "title"), 5, "wrong_type"),
    (("run", "labels", "team"), 3, "wrong_type"),
    (("run", "labels", "env"), None, "wrong_type"),
    (("run", "configuration", "source"), "whim", "unknown_enum"),
    (("run", "provenance", "kind"), "guessed", "unknown_enum"),
    (("run", "acceptance_rule", "window_days"), 1e30, "invalid_rule"),
    (
        ("run", "acceptance_rule", "score"),
        {"name": "x", "target": 1, "better": "up"},
        "invalid_rule",
    ),
    (("run", "id"), 5, "missing_run_id"),
]


def targeted(m: Mutant, data: st.DataObject) -> None:
    usable = [t for t in TARGETS if _has(m.doc, t[0])]
    if not usable:
        return
    keys, value, code = data.draw(st.sampled_from(usable))
    _set(m.doc, keys, copy.deepcopy(value))
    exact = None if code in ("invalid_rule", "missing_run_id") else _path(keys)
    m.expects.append(Expect(frozenset({code}), exact, keys=keys, value=value))


# Signals with a value of the wrong JSON type (issue 36): each a bad_value.
MISTYPED_SIGNALS = [
    {"id": "s", "kind": "verdict", "name": "tests", "value": True},
    {"id": "s", "kind": "verdict", "name": "tests", "value": False},
    {"id": "s", "kind": "score", "name": "bench_score", "value": "2400"},
    {"id": "s", "kind": "score", "name": "bench_score", "value": "x"},
    {"id": "s", "kind": "event", "name": "revert", "value": 7},
]


def mistyped_signal(m: Mutant, data: st.DataObject) -> None:
    """A signal whose value has the wrong JSON type: a verdict true, a score "2400", ..."""
    signals = m.doc.get("run", {}).get("signals") if isinstance(m.doc.get("run"), dict) else None
    if not isinstance(signals, list) or not signals:
        return
    i = data.draw(st.integers(0, len(signals) - 1))
    signal = copy.deepcopy(data.draw(st.sampled_from(MISTYPED_SIGNALS)))
    signals[i] = signal
    keys = ("run", "signals", i)
    m.expects.append(
        Expect(frozenset({"bad_value"}), _path((*keys, "value")), keys=keys, value=signal)
    )


def cut(m: Mutant, data: st.DataObject) -> None:
    m.cut = data.draw(st.floats(0.0, 1.0, exclude_max=True))


MUTATIONS: list[Callable[[Mutant, st.DataObject], None]] = [
    delete,
    retype,
    repeat_name,
    bad_string,
    huge_number,
    targeted,
    mistyped_signal,
    cut,
]


def _serialize(m: Mutant) -> bytes:
    data = json.dumps(m.doc).encode()
    for marker, raw in m.marks.items():
        data = data.replace(marker.encode(), raw)
    if m.cut is not None:
        data = data[: max(1, int(len(data) * m.cut))]
        m.quarantine_only = True
    return data


@st.composite
def mutants(draw: st.DrawFn) -> Mutant:
    doc = copy.deepcopy(draw(st.sampled_from(POOL)))
    m = Mutant(doc)
    data = draw(st.data())
    for mutate in draw(st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=3)):
        mutate(m, data)
    if isinstance(m.doc.get("run"), dict) and isinstance(m.doc["run"].get("id"), str):
        pass
    else:  # run or run.id deleted, retyped: it must be quarantined whatever else happened
        m.quarantine_only = True
    return m


def _unique_ids(mutated: list[Mutant]) -> None:
    """The same pool document drawn twice is still two runs."""
    for i, m in enumerate(mutated):
        run = m.doc.get("run")
        if isinstance(run, dict) and isinstance(run.get("id"), str) and "@@" not in run["id"]:
            run["id"] = f"L{i}-{run['id']}"


def _check(mutated: list[Mutant], tmp: Path) -> None:
    _unique_ids(mutated)
    lines = [_serialize(m) for m in mutated]
    (tmp / "fuzz.ndjson").write_bytes(b"\n".join(lines) + b"\n")
    summary = oa.ingest(tmp / "fuzz.ndjson", tmp / "ds", workers=0)
    assert summary.reconciles
    assert summary.documents_read == len(lines)
    ds = oa.scan_dataset(tmp / "ds")
    quarantined = set(ds.quarantine.collect().get_column("source_line").to_list())
    findings = ds.findings.select("source_line", "code", "json_path").collect().rows()
    runs = ds.runs.collect().height
    assert runs + len(quarantined) == len(lines)
    for line, m in enumerate(mutated, start=1):
        if line in quarantined:
            continue
        assert not m.quarantine_only, f"line {line}: a cut document was not quarantined"
        found = [(c, p) for ln, c, p in findings if ln == line]
        for e in (e for e in m.expects if e.holds(m.doc)):
            ok = any(c in e.codes and (e.path is None or p == e.path) for c, p in found)
            assert ok, f"line {line}: {e} not among {found}"


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(mutants(), min_size=1, max_size=4))
def test_fuzz_mutated_documents_never_abort_and_always_land(
    mutated: list[Mutant],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _check(mutated, Path(tmp))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["gzip", "zstd"]), st.floats(0.02, 0.98))
def test_fuzz_compressed_stream_cut_at_any_byte_keeps_every_whole_line(fmt: str, at: float) -> None:
    import gzip
    import zlib

    import zstandard

    docs = [copy.deepcopy(d) for d in POOL[:12]]
    plain = b"".join(json.dumps(d).encode() + b"\n" for d in docs)
    packed = (
        gzip.compress(plain, mtime=0)
        if fmt == "gzip"
        else zstandard.ZstdCompressor(write_content_size=False).compress(plain)
    )
    cut = packed[: int(len(packed) * at)]
    d = zlib.decompressobj(31) if fmt == "gzip" else zstandard.ZstdDecompressor().decompressobj()
    try:
        readable = d.decompress(cut)
    except (zlib.error, zstandard.ZstdError):
        readable = b""
    whole = readable.count(b"\n")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / ("a.ndjson.gz" if fmt == "gzip" else "a.ndjson.zst")
        src.write_bytes(cut)
        s = oa.ingest(src, Path(tmp) / "ds", workers=0)
        ds = oa.scan_dataset(Path(tmp) / "ds")
        q = ds.quarantine.select("code", "source_line").collect().rows()
    assert s.reconciles
    assert s.runs_new == whole
    assert q == [("truncated", whole + 1)]
