"""Seeded, deterministic generator of realistic OCP 0.3 run documents.

Every document is a function of ``(seed, index)`` alone: the generator seeds a
private ``random.Random`` from the pair before building document ``index``, so
any slice of the stream, written by any number of worker processes, is
byte-identical to the same slice of a single-process run.

The documents imitate a fleet of eight teams running agent workflows
(``solo``, ``implement_review``, ``best_of_n``, ``swarm``...) on 200
repositories through the year 2026, each team with its own acceptance rule.
About 5 % of the documents carry one awkward case (ties across offsets, naive
or missing timestamps, odd verdict words, dangling ``at_attempt``...); those
runs name the case in ``run.ext["dev.ocp-analytics.bench"]["case"]``. On
request (``mistyped``, off by default) a share of the documents carries one
value written in the wrong JSON type (``benchmarks/generator/mistype.py``),
as producers send them; the documents are otherwise the same. Nothing
is observed after ``HORIZON`` (2026-12-01T00:00:00Z), so an ``as_of`` at or
after it sees every signal. The pieces of a document are built in
``benchmarks/generator/``; this module writes them.

Command line::

    python -m benchmarks.generate --docs 2000000 --seed 0 --out /tmp/ocp \\
        --workers 2 --rules 50 --rules-out /tmp/ocp/rules.toml [--mistyped 0.15]
"""

from __future__ import annotations

import argparse
import gc
import gzip as gzip_module
import os
import random
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from benchmarks.generator.document import build_document
from benchmarks.generator.mistype import MISTYPE_KINDS, mistype
from benchmarks.generator.world import HORIZON

__all__ = [
    "HORIZON",
    "MISTYPE_KINDS",
    "generate_documents",
    "main",
    "write_ndjson",
    "write_rules",
]

# --------------------------------------------------------------------------
# Public API.


def generate_documents(
    n: int, seed: int = 0, start: int = 0, *, mistyped: float = 0.0, kind: str = "mixed"
) -> Iterator[dict[str, Any]]:
    """Yield the documents ``start`` .. ``start + n - 1`` of the stream ``seed``.

    Each document depends only on ``(seed, index)``, so slices of the stream
    can be generated independently and concatenated.

    Parameters
    ----------
    n
        Number of documents.
    seed
        Stream seed, a non-negative integer.
    start
        Index of the first document.
    mistyped
        The share of documents (0 to 1) with one value written in the wrong
        JSON type; the others are the same documents as with none.
    kind
        Which value is mistyped (one of ``MISTYPE_KINDS``): ``"mixed"``
        (verdicts written as booleans and scores as text, mostly), or one kind.

    Examples
    --------
    >>> docs = list(generate_documents(3, seed=7))
    >>> [d["run"]["id"] for d in docs]
    ['run_7_000000000', 'run_7_000000001', 'run_7_000000002']
    >>> docs[2] == next(generate_documents(1, seed=7, start=2))
    True
    >>> docs[0]["ocp"], docs[0]["privacy"]
    ('0.3', {'profile': 'metadata_only'})
    >>> odd = next(generate_documents(1, seed=7, mistyped=1.0, kind="score_text"))
    >>> [s["value"] for s in odd["run"]["signals"] if s["kind"] == "score"]
    ['1769.0']
    """
    if n < 0 or start < 0 or seed < 0:
        raise ValueError(f"n, seed and start must be >= 0; got n={n}, seed={seed}, start={start}")
    if not 0.0 <= mistyped <= 1.0 or kind not in MISTYPE_KINDS:
        raise ValueError(
            f"mistyped must be in 0..1 and kind one of {', '.join(MISTYPE_KINDS)}; "
            f"got mistyped={mistyped}, kind={kind!r}"
        )
    rng = random.Random()
    odd = random.Random()
    for index in range(start, start + n):
        doc = build_document(seed, index, rng)
        if mistyped:
            mistype(doc, seed, index, mistyped, kind, odd)
        yield doc


_Job = tuple[Path, int, int, int, bool, float, str]  # path, seed, start, n, gzip, mistyped, kind


def _write_chunk(job: _Job) -> tuple[Path, int, int, int]:
    """Write one part file; return (path, docs, uncompressed bytes, file bytes)."""
    gc_was_enabled = gc.isenabled()
    gc.disable()  # documents hold no cycles; collections only cost time here
    try:
        return _write_part(*job)
    finally:
        if gc_was_enabled:
            gc.enable()


def _write_part(
    path: Path, seed: int, start: int, n: int, gz: bool, mistyped: float, kind: str
) -> tuple[Path, int, int, int]:
    dumps = orjson.dumps
    opt = orjson.OPT_APPEND_NEWLINE
    raw = 0
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        sink: Any = fh
        if gz:
            sink = gzip_module.GzipFile(
                filename="", mode="wb", fileobj=fh, mtime=0, compresslevel=6
            )
        batch: list[bytes] = []
        for doc in generate_documents(n, seed, start, mistyped=mistyped, kind=kind):
            batch.append(dumps(doc, option=opt))
            if len(batch) == 2000:
                buf = b"".join(batch)
                raw += len(buf)
                sink.write(buf)
                batch.clear()
        buf = b"".join(batch)
        raw += len(buf)
        sink.write(buf)
        if gz:
            sink.close()
    os.replace(tmp, path)
    return path, n, raw, path.stat().st_size


def _write(
    out_dir: Path,
    n: int,
    seed: int,
    chunk_docs: int,
    gzip: bool,
    workers: int,
    mistyped: float = 0.0,
    kind: str = "mixed",
) -> list[tuple[Path, int, int, int]]:
    if chunk_docs < 1 or workers < 1:
        raise ValueError(f"chunk_docs and workers must be >= 1; got {chunk_docs}, {workers}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    suffix = ".ndjson.gz" if gzip else ".ndjson"
    jobs = [
        (
            out_dir / f"part-{k:05d}{suffix}",
            seed,
            start,
            min(chunk_docs, n - start),
            gzip,
            mistyped,
            kind,
        )
        for k, start in enumerate(range(0, n, chunk_docs))
    ]
    if workers == 1 or len(jobs) <= 1:
        return [_write_chunk(job) for job in jobs]
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
        return list(pool.map(_write_chunk, jobs))


def write_ndjson(
    out_dir: Path,
    n: int,
    seed: int = 0,
    chunk_docs: int = 100_000,
    gzip: bool = False,
    workers: int = 1,
    *,
    mistyped: float = 0.0,
    kind: str = "mixed",
) -> list[Path]:
    """Write ``n`` documents as ``part-00000.ndjson[.gz]`` files, one document a line.

    File ``k`` holds documents ``k * chunk_docs`` onwards. The bytes depend on
    ``(n, seed, chunk_docs, gzip, mistyped, kind)`` only, never on
    ``workers``. Gzip members carry no name or time, so they are reproducible
    too. Existing files of the same names are replaced; other files in
    ``out_dir`` are left alone. ``mistyped`` and ``kind``: as
    :func:`generate_documents`.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     paths = write_ndjson(Path(tmp), 5, seed=1, chunk_docs=2)
    ...     [p.name for p in paths]
    ['part-00000.ndjson', 'part-00001.ndjson', 'part-00002.ndjson']
    """
    return [p for p, *_ in _write(out_dir, n, seed, chunk_docs, gzip, workers, mistyped, kind)]


# --------------------------------------------------------------------------
# Alternative acceptance rules.

_ALT_VERDICTS = ("tests", "review", "referee", "ci", "merge")
_ALT_SCORES = (
    # name, better, scale, low target, high target, digits
    ("runtime_s", "lower", "log", 600, 7200, 0),
    ("bench_score", "higher", None, 2000, 3000, 0),
    ("quality", "higher", "fraction", 0.5, 0.95, 2),
)


def _alt_rule(rr: random.Random, k: int) -> dict[str, Any]:
    requires = [v for v in _ALT_VERDICTS if rr.random() < (0.8 if v == "tests" else 0.3)]
    score = None
    if not requires or rr.random() < 0.3:
        name, better, scale, lo, hi, digits = _ALT_SCORES[rr.randrange(len(_ALT_SCORES))]
        target = round(lo + (hi - lo) * rr.random(), digits)
        score = {
            "name": name,
            "target": target if digits else int(target),
            "better": better,
        }
        if scale is not None:
            score["scale"] = scale
    parts = [f"{v} passes" for v in requires]
    if score is not None:
        op = "<=" if score["better"] == "lower" else ">="
        parts.append(f"{score['name']} {op} {score['target']}")
    rule: dict[str, Any] = {
        "name": f"alt_{k:03d}",
        "definition": " and ".join(parts),
        "requires": requires,
    }
    if rr.random() < 0.6:
        pool = ("revert", "incident", "hotfix", "issue")
        rule["excludes_events"] = [e for e in pool if rr.random() < 0.5]
    if rr.random() < 0.6:
        rule["window_days"] = rr.choice((0, 3, 7, 14, 30, 90))
    rule["score"] = score
    return rule


def _toml_value(v: Any) -> str:
    if isinstance(v, str):
        return orjson.dumps(v).decode()
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return repr(v)


def write_rules(path: Path, k: int, seed: int = 0) -> Path:
    """Write ``k`` alternative acceptance rules named ``alt_001`` ... ``alt_<k>``.

    A path ending in ``.json`` gets a JSON list of OCP ``acceptance_rule``
    objects (``score`` is ``null`` for a binary rule); any other path gets TOML
    ``[[rule]]`` tables with an optional ``[rule.score]`` sub-table.

    Examples
    --------
    >>> import tempfile, tomllib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = write_rules(Path(tmp) / "rules.toml", 3)
    ...     [r["name"] for r in tomllib.loads(p.read_text())["rule"]]
    ['alt_001', 'alt_002', 'alt_003']
    """
    if k < 0 or k > 999_999:
        raise ValueError(f"k must be in 0..999999; got {k}")
    rr = random.Random(seed)
    rules = [_alt_rule(rr, i) for i in range(1, k + 1)]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".json":
        path.write_bytes(orjson.dumps(rules, option=orjson.OPT_INDENT_2) + b"\n")
        return path
    lines = [f"# {k} alternative acceptance rules, seed {seed}"]
    for rule in rules:
        lines += ["", "[[rule]]"]
        lines += [f"{key} = {_toml_value(v)}" for key, v in rule.items() if key != "score"]
        if rule["score"] is not None:
            lines.append("[rule.score]")
            lines += [f"{key} = {_toml_value(v)}" for key, v in rule["score"].items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------
# Command line.


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.generate",
        description="Write seeded synthetic OCP 0.3 run documents as NDJSON files.",
    )
    p.add_argument("--docs", type=int, required=True, help="number of documents")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument("--gzip", action="store_true", help="write .ndjson.gz")
    p.add_argument("--chunk-docs", type=int, default=100_000, help="documents per file")
    p.add_argument("--workers", type=int, default=1, help="worker processes")
    p.add_argument("--rules", type=int, default=0, help="also write K alternative rules")
    p.add_argument("--rules-out", type=Path, help="rules file (.toml or .json)")
    p.add_argument(
        "--mistyped",
        type=float,
        default=0.0,
        help="share of documents (0 to 1) with one value in the wrong JSON type",
    )
    p.add_argument(
        "--mistype", choices=MISTYPE_KINDS, default="mixed", help="which value is mistyped"
    )
    args = p.parse_args(argv)
    if args.rules and args.rules_out is None:
        p.error("--rules needs --rules-out")

    t = time.perf_counter()
    stats = _write(
        args.out,
        args.docs,
        args.seed,
        args.chunk_docs,
        args.gzip,
        args.workers,
        args.mistyped,
        args.mistype,
    )
    secs = time.perf_counter() - t
    docs = sum(s[1] for s in stats)
    raw = sum(s[2] for s in stats)
    disk = sum(s[3] for s in stats)
    for path, *_ in stats:
        print(path)
    print(f"files: {len(stats)} in {args.out}")
    print(f"documents: {docs:,}")
    print(f"bytes: {disk:,} on disk, {raw:,} uncompressed")
    print(f"mean document: {raw / max(docs, 1):,.0f} bytes")
    print(f"time: {secs:.1f} s, {docs / max(secs, 1e-9):,.0f} docs/s (workers={args.workers})")
    if args.rules:
        path = write_rules(args.rules_out, args.rules, args.seed)
        print(f"rules: {args.rules} to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
