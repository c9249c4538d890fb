"""The decisions store (#38): a night's refresh against a full evaluation.

``python -m benchmarks.refresh --docs 200000 --out bench-refresh``

Ingests ``--docs`` generated runs (each with a commit artifact), builds the
decisions store of 20 generated rules and the recorded rule once
(``refresh`` from raw), then a night: 1 % new runs, 0.2 % of the runs
ingested again with other content, and late events about 0.1 % of the runs
(``benchmarks.events.event_records``). It times, in this process:

- ``accept_20``: ``write_acceptance`` × 20 rules and the recorded rule, the
  night's dataset, from raw;
- ``refresh``: the night's ``refresh`` (the target: at most 10 % of ``accept_20``);
- ``read_raw``: ``acceptance`` of the same rules (rows in memory, what a report reads);
- ``read_store``: ``decisions_or_raw`` after the refresh (the target: at most 10 % of ``read_raw``).

Prints a Markdown table of seconds and the two ratios.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from benchmarks.events import _ended, _with_commit, event_records
from benchmarks.generate import generate_documents, write_rules

SEED = 11
DAY = "2026-12-01T00:00:00Z"
NIGHT = "2026-12-02T00:00:00Z"


def _write(path: Path, docs: Any) -> Path:
    with path.open("wb") as f:
        for d in docs:
            f.write(orjson.dumps(d) + b"\n")
    return path


def _timed(what: Callable[[], Any]) -> tuple[float, Any]:
    t = time.perf_counter()
    out = what()
    return time.perf_counter() - t, out


def main() -> None:
    import ocp_analytics as oa
    from ocp_analytics.api.refresh import decisions_or_raw

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--docs", type=int, default=200_000)
    p.add_argument("--out", type=Path, default=Path("bench-refresh"))
    args = p.parse_args()
    n, out = args.docs, args.out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    ds, rules = out / "ds", [write_rules(out / "rules.toml", 20, seed=3)]

    day = (_with_commit(d, SEED, i) for i, d in enumerate(generate_documents(n, SEED)))
    oa.ingest(_write(out / "day.ndjson", day), ds)
    build, _ = _timed(lambda: oa.refresh(ds, rules, as_of=DAY))

    new = generate_documents(n // 100, SEED, n)
    replaced = []
    for i, d in enumerate(generate_documents(n // 500, SEED, n // 2), n // 2):
        d = json.loads(json.dumps(_with_commit(d, SEED, i)))
        d["run"]["signals"] = d["run"].get("signals", [])[:1]
        replaced.append(d)
    late = list(generate_documents(n // 1000, SEED, n // 3))
    ended = {i: _ended(d) for i, d in enumerate(late, n // 3)}
    feed = [
        {**r, "commit": r["commit"]} for r in event_records(n, n // 1000, seed=SEED, ended=ended)
    ]
    oa.ingest(
        [
            _write(out / "new.ndjson", (_with_commit(d, SEED, i) for i, d in enumerate(new, n))),
            _write(out / "replaced.ndjson", replaced),
        ],
        ds,
    )
    oa.ingest_events(_write(out / "events.ndjson", feed), ds)

    acc = out / "acc.parquet"
    full, _ = _timed(lambda: oa.write_acceptance(ds, acc, rules, as_of=NIGHT))
    night, summary = _timed(lambda: oa.refresh(ds, rules, as_of=NIGHT))
    raw, _ = _timed(lambda: oa.acceptance(ds, rules, as_of=NIGHT))
    stored, (_, read) = _timed(lambda: decisions_or_raw(ds, rules, as_of=NIGHT))
    print(f"| {n:,} runs | seconds |\n|---|---:|")
    for name, secs in [
        ("refresh from raw (the first)", build),
        ("accept_20 (write_acceptance, night)", full),
        (f"refresh, night ({summary})", night),
        ("acceptance in memory, raw", raw),
        (f"decisions_or_raw ({read})", stored),
    ]:
        print(f"| {name} | {secs:.2f} |")
    print(f"\nrefresh / accept_20 = {night / full:.3f}; store read / raw read = {stored / raw:.3f}")


if __name__ == "__main__":
    main()
