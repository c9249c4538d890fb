"""Late events (#11): evaluation with an event feed beside the same without.

``python -m benchmarks.events --docs 200000 --events 20000 --out bench-events``

Writes the generator's runs with one ``commit`` artifact each (the
generator itself gives one to 0.05 % of runs), an event feed about those
commits (:func:`write_event_feed`), ingests the runs once, copies the
dataset and ingests the feed into the copy, then times each figure on both
datasets, every figure in its own process (peak RSS from ``wait4``), the
median of ``--repeat`` runs. Prints a Markdown table and writes
``results-events-<docs>.json`` into ``--results`` (default: ``benchmarks/results/``).

The feed, a function of ``(seed, index)`` alone: 90 % of the events concern
a commit of a generated run (one run in ``docs / events`` gets one; runs
``100k`` and ``100k + 1`` share a commit, so some events match two runs),
10 % an unknown commit; names revert, incident, issue, hotfix; times from a
day before the run's end to 30 days after it (so some fall outside the
window or after ``as_of``), 2 % with no time.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from benchmarks import RESULTS
from benchmarks.child import run_child
from benchmarks.generate import generate_documents, write_rules

HERE = Path(__file__).parent
AS_OF = "2026-12-01T00:00:00Z"
NAMES = ("revert", "incident", "issue", "hotfix")
FIGURES = ("accept_recorded", "accept_20", "rates_team_20", "late_only", "unmatched")


def commit_of(seed: int, index: int) -> str:
    """The commit of generated run ``index``; run ``100k + 1`` shares run ``100k``'s."""
    if index % 100 == 1:
        index -= 1
    return hashlib.sha1(f"{seed}:{index}".encode()).hexdigest()


def _with_commit(doc: dict[str, Any], seed: int, index: int) -> dict[str, Any]:
    sha = commit_of(seed, index)
    art = {"id": f"merge-{index}", "path": sha, "kind": {"value": "merge"}}
    doc["artifacts"] = [a for a in doc.get("artifacts", []) if a["kind"]["value"] != "commit"]
    doc["artifacts"].append(art)
    return doc


def _ended(doc: dict[str, Any]) -> datetime:
    text = doc["run"].get("ended_at") or doc["run"].get("started_at") or AS_OF
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return datetime(2026, 6, 1, tzinfo=UTC)


def event_records(
    docs: int, events: int, seed: int = 0, ended: dict[int, datetime] | None = None
) -> Iterator[dict[str, Any]]:
    """The event feed: ``events`` records about the commits of ``docs`` generated runs."""
    step = max(docs // max(events, 1), 1)
    for k in range(events):
        rng = random.Random(f"events:{seed}:{k}")
        index = (k * step) % docs
        known = rng.random() < 0.9
        commit = commit_of(seed, index) if known else f"unknown-{seed}-{k}"
        base = (ended or {}).get(index, datetime(2026, 6, 1, tzinfo=UTC))
        yield event_record(rng, f"ev-{seed}-{k}", k, commit, base, (-86_400, 30 * 86_400))


def event_record(
    rng: random.Random, ident: str, k: int, commit: str, base: datetime, span: tuple[int, int]
) -> dict[str, Any]:
    """One late event about ``commit``: its name and tier drawn from ``rng``, 2 % with no time.

    Else observed ``base`` plus a number of seconds drawn from ``span``.
    """
    rec: dict[str, Any] = {
        "id": ident,
        "commit": commit,
        "kind": "event",
        "name": rng.choice(NAMES),
        "value": f"ref/{k}",
        "source": {"kind": "ci", "ref": f"ci/{k}"},
        "tier": rng.choice(("verified", "reported", "asserted")),
    }
    if rng.random() >= 0.02:
        at = base + timedelta(seconds=rng.randint(*span))
        rec["observed_at"] = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    return rec


def _write_runs(job: tuple[Path, int, int, int, int]) -> dict[int, datetime]:
    """Runs ``start .. start + n`` (with commits) to ``path``; the end time of every ``step``-th."""
    path, seed, start, n, step = job
    ended: dict[int, datetime] = {}
    with path.open("wb") as f:
        for i, doc in enumerate(generate_documents(n, seed, start), start):
            if i % step == 0:
                ended[i] = _ended(doc)
            f.write(orjson.dumps(_with_commit(doc, seed, i)) + b"\n")
    return ended


def write_event_feed(
    out: Path, docs: int, events: int, seed: int = 0, workers: int = 2, part_docs: int = 500_000
) -> tuple[Path, Path]:
    """Runs with commit artifacts (``runs/part-*.ndjson``) and their event feed (``events.ndjson``).

    The runs are written in parts of ``part_docs`` by ``workers`` processes; every
    document is a function of ``(seed, index)``, so the parts do not depend on either.
    """
    runs, feed = out / "runs", out / "events.ndjson"
    shutil.rmtree(runs, ignore_errors=True)
    runs.mkdir(parents=True)
    step = max(docs // max(events, 1), 1)
    jobs = [
        (runs / f"part-{k:05d}.ndjson", seed, start, min(part_docs, docs - start), step)
        for k, start in enumerate(range(0, docs, part_docs))
    ]
    ended: dict[int, datetime] = {}
    with ProcessPoolExecutor(max_workers=max(1, min(workers, len(jobs)))) as pool:
        for part in pool.map(_write_runs, jobs):
            ended.update(part)
    with feed.open("wb") as f:
        for rec in event_records(docs, events, seed, ended):
            f.write(orjson.dumps(rec) + b"\n")
    return runs, feed


# --- figures (each in its own process) -------------------------------------------


def _figure(name: str, ds: Path, rules: Path) -> int:
    import ocp_analytics as oa

    if name == "accept_recorded":
        out = ds.parent / f"{ds.name}-acc.parquet"
        rows = oa.write_acceptance(ds, out, None, as_of=AS_OF)
        out.unlink()
        return rows
    if name == "accept_20":
        out = ds.parent / f"{ds.name}-acc20.parquet"
        rows = oa.write_acceptance(ds, out, [rules], recorded=False, as_of=AS_OF)
        out.unlink()
        return rows
    if name == "rates_team_20":
        return oa.rates(ds, [rules], by=["label.team"], as_of=AS_OF).height
    if name == "unmatched":
        return oa.unmatched_events(ds).collect().height
    if name == "late_only":
        return oa.acceptance(ds, as_of=AS_OF, late_only=True).height
    if name == "ingest_events":
        return oa.ingest_events(ds.parent / "events.ndjson", ds).events_new
    raise SystemExit(f"unknown figure {name}")


def _child(name: str, ds: Path, rules: Path) -> tuple[float, int, float]:
    args = ["--child", name, str(ds), str(rules)]
    result, usage, _ = run_child("benchmarks.events", args, f"figure {name}")
    return result["seconds"], result["rows"], usage.ru_maxrss / 1024


def _measure(name: str, ds: Path, rules: Path, repeat: int) -> dict[str, Any]:
    runs = [_child(name, ds, rules) for _ in range(repeat)]
    return {
        "seconds": statistics.median(r[0] for r in runs),
        "rows": runs[0][1],
        "peak_rss_mb": max(r[2] for r in runs),
        "runs": [r[0] for r in runs],
    }


def _prepare(out: Path, docs: int, events: int, seed: int) -> None:
    """Runs and feed written, runs ingested into ``plain`` and copied to ``with-events``."""
    import ocp_analytics as oa

    write_event_feed(out, docs, events, seed)
    write_rules(out / "rules.toml", 20, seed)
    plain, with_events = out / "plain", out / "with-events"
    for d in (plain, with_events):
        shutil.rmtree(d, ignore_errors=True)
    oa.ingest(out / "runs", plain)
    shutil.copytree(plain, with_events)


def main(argv: list[str] | None = None) -> int:
    """Generate, ingest, and time the figures with and without events."""
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "--prepare":
        _prepare(Path(args[1]), int(args[2]), int(args[3]), int(args[4]))
        return 0
    if args and args[0] == "--child":
        name, ds, rules = args[1], Path(args[2]), Path(args[3])
        start = time.perf_counter()
        rows = _figure(name, ds, rules)
        print(orjson.dumps({"seconds": time.perf_counter() - start, "rows": rows}).decode())
        return 0
    p = argparse.ArgumentParser(prog="python -m benchmarks.events")
    p.add_argument("--docs", type=int, default=200_000)
    p.add_argument("--events", type=int, default=20_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--out", type=Path, required=True, help="folder for the data and datasets")
    p.add_argument("--results", type=Path, default=RESULTS, help="folder for the .json")
    a = p.parse_args(args)
    t0 = time.perf_counter()
    rules, plain, with_events = a.out / "rules.toml", a.out / "plain", a.out / "with-events"
    # in a child too: a child inherits its parent's peak RSS (ru_maxrss)
    cmd = [sys.executable, "-m", "benchmarks.events", "--prepare", str(a.out)]
    subprocess.run([*cmd, str(a.docs), str(a.events), str(a.seed)], check=True, cwd=HERE.parent)
    print(f"data and ingest: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    results: dict[str, Any] = {
        "docs": a.docs,
        "events": a.events,
        "ingest_events": _measure("ingest_events", with_events, rules, 1),
    }
    for fig in FIGURES:
        results[fig] = {
            "without": _measure(fig, plain, rules, a.repeat),
            "with": _measure(fig, with_events, rules, a.repeat),
        }
    a.results.mkdir(parents=True, exist_ok=True)
    (a.results / f"results-events-{a.docs}.json").write_bytes(
        orjson.dumps(results, option=orjson.OPT_INDENT_2)
    )
    print(markdown(results))
    return 0


def markdown(results: dict[str, Any]) -> str:
    """The figures as a Markdown table."""
    ie = results["ingest_events"]
    lines = [
        f"{results['docs']:,} runs, {results['events']:,} events",
        "",
        "| figure | without events | with events | time × |",
        "|---|---|---|---|",
        f"| ingest_events | – | {ie['seconds']:.2f} s, {ie['peak_rss_mb']:,.0f} MB "
        f"({ie['rows']:,} stored) | – |",
    ]
    for fig in FIGURES:
        w, e = results[fig]["without"], results[fig]["with"]
        ratio = e["seconds"] / w["seconds"] if w["seconds"] else 0.0
        lines.append(
            f"| {fig} | {w['seconds']:.2f} s, {w['peak_rss_mb']:,.0f} MB | "
            f"{e['seconds']:.2f} s, {e['peak_rss_mb']:,.0f} MB ({e['rows']:,} rows) | {ratio:.2f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
