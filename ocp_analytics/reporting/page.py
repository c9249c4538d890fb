"""The nightly report: one self-contained HTML page, and the data of every figure beside it.

:func:`report` reads its arguments (:mod:`.context`), computes every figure's
data in one pass of the evaluation loop (:mod:`.figures`), writes each as a
data file, then the page (:mod:`.html`, the charts from :mod:`.charts`:
Vega-Lite made with altair, rendered to static SVG by vl-convert, so the page
holds no script and opens offline). The template is
``templates/report.html.j2`` (jinja2).

Every figure is also written as data (JSON or Parquet) into ``data_out``, with
an ``index.json`` naming each file, so a scheduler can alert on a figure
without reading the page.
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson
import polars as pl

from ocp_analytics._typing import Period, RulesLike, StoreLike, When
from ocp_analytics.exceptions import MissingExtraError, OcpAnalyticsError, hint
from ocp_analytics.reporting.context import Context, resolve_context
from ocp_analytics.reporting.figures import FIGURES, build_figures
from ocp_analytics.reporting.freshness import check_staleness, freshness
from ocp_analytics.reporting.html import PageExtras, PageMeta, render_html
from ocp_analytics.store.commits import Snapshot
from ocp_analytics.store.scan import Dataset, scan_at

EXTRA = "pip install 'ocp-analytics[report]'"
_MODULES = {"altair": "altair", "vl_convert": "vl-convert-python", "jinja2": "jinja2"}
DataFormat = Literal["json", "parquet"]


@dataclass(frozen=True)
class ReportFiles:
    """What :func:`report` wrote: the page and one data file per figure."""

    html: Path
    data_dir: Path
    data: dict[str, Path] = field(default_factory=dict)


def require_extra() -> None:
    """Raise :class:`MissingExtraError` unless the ``report`` extra is installed.

    Examples
    --------
    >>> require_extra()  # the test extra installs it
    """
    missing = [pkg for mod, pkg in _MODULES.items() if importlib.util.find_spec(mod) is None]
    if missing:
        raise MissingExtraError(
            f"the report needs {', '.join(missing)}, not installed. Hint: {EXTRA}"
        )


def _check_format(data_format: str) -> None:
    if data_format not in ("json", "parquet"):
        raise OcpAnalyticsError(
            hint(f"unknown data format {data_format!r}.", "use json or parquet.")
        )


def write_data(
    figs: dict[str, pl.DataFrame], folder: Path, fmt: DataFormat, header: dict[str, Any]
) -> dict[str, Path]:
    """Write every figure as ``<name>.json`` (header, rows) or ``<name>.parquet``; index.json."""
    folder.mkdir(parents=True, exist_ok=True)
    opts = orjson.OPT_INDENT_2 | orjson.OPT_NAIVE_UTC
    written, index = {}, {}
    for name, frame in figs.items():
        path = folder / f"{name}.{fmt}"
        if fmt == "parquet":
            _write_parquet(frame, path, header)
        else:
            doc = {"figure": name, "description": FIGURES[name], **header, "rows": frame.to_dicts()}
            path.write_bytes(orjson.dumps(doc, option=opts, default=str))
        written[name] = path
        index[name] = {"file": path.name, "rows": frame.height, "description": FIGURES[name]}
    (folder / "index.json").write_bytes(
        orjson.dumps({**header, "format": fmt, "figures": index}, option=opts, default=str)
    )
    return written


def _write_parquet(frame: pl.DataFrame, path: Path, header: dict[str, Any]) -> None:
    """A figure as Parquet, ``as_of`` and ``snapshot`` in its metadata as every output has them."""
    import pyarrow.parquet as pq

    table = frame.to_arrow()
    snapshot = header.get("snapshot")
    meta = {
        **(table.schema.metadata or {}),
        b"ocp_analytics.as_of": header["as_of"].isoformat().encode(),
        b"ocp_analytics.snapshot": b"" if snapshot is None else str(snapshot).encode(),
    }
    pq.write_table(table.replace_schema_metadata(meta), path)


def write_page(
    files: ReportFiles,
    figs: dict[str, pl.DataFrame],
    ctx: Context,
    title: str,
    dataset: str,
    data_format: DataFormat,
    extras: PageExtras | None = None,
) -> None:
    """Write the page ``files.html``, linking to each data file by its path relative to the page."""
    base = files.html.resolve().parent
    links = {n: os.path.relpath(p.resolve(), base) for n, p in files.data.items()}
    data_dir = os.path.relpath(files.data_dir.resolve(), base)
    meta = PageMeta(title=title, dataset=dataset, data_dir=data_dir, data_format=data_format)
    files.html.parent.mkdir(parents=True, exist_ok=True)
    html = render_html(figs, ctx, links, meta, extras or PageExtras(freshness={}, banners=[]))
    files.html.write_text(html, encoding="utf-8")


def report(
    dataset: StoreLike | Dataset,
    rules: RulesLike = None,
    *,
    by: Sequence[str] | str = (),
    since: When = None,
    until: When = None,
    as_of: When = None,
    snapshot: Snapshot = None,
    period: Period | None = None,
    out: str | Path = "report.html",
    data_out: str | Path | None = None,
    data_format: DataFormat = "json",
    sample: int = 5,
    title: str = "Acceptance report",
    max_staleness: When = None,
    use_decisions: bool = True,
) -> ReportFiles:
    """Write the nightly report: one self-contained HTML page and the data of every figure.

    Sections (``docs/report.md``): the headline with the change against the
    previous window and its call (improved, regressed, within noise, not
    enough data), accept rate per period and group with each period's change
    against the one before, the group × rule matrix and the largest flips
    with their paired test, for each rule with a score the accept rate at
    every score target (the threshold sweep, :func:`~ocp_analytics.sweep`),
    attempts to acceptance, evidence tiers, provisional acceptances and data
    quality. Group columns are named as
    ``by`` spells them in every data file, as :func:`~ocp_analytics.rates`
    names them.

    Parameters
    ----------
    dataset, rules, as_of, snapshot
        As for :func:`~ocp_analytics.rates`; the recorded rules always come first.
        The dataset is read once, at ``snapshot`` (else its newest commit),
        and that commit's ``seq`` is written beside ``as_of`` in the page's
        header and every data file: rerun with both, the page is the same
        after any later ingest.
    by
        Group columns: a ``runs`` column or ``label.KEY``.
    since, until
        The window, as for :func:`~ocp_analytics.rates` (``docs/time.md``); the
        previous window is the one of the same length just before ``since``.
    period
        ``day``, ``week`` or ``month`` for the trend; by default ``day`` for
        windows up to 62 days, ``week`` up to a year (or without ``since``),
        ``month`` beyond.
    out
        The HTML file to write.
    data_out
        Folder for the data files (default: ``<out stem>-data`` beside the page).
    data_format
        ``json`` (a header with the window and ``rows``) or ``parquet``.
    sample
        Run ids kept per flip.
    title
        The page title.
    max_staleness
        A duration (``2d``, ``12h``): when the newest run ended longer before
        ``as_of``, raise :class:`OcpAnalyticsError` and write nothing, so a
        scheduled chain cannot publish a stale page.
    use_decisions
        Read the rules' rows from the dataset's decisions stores where they
        give the rows a full evaluation gives (:func:`~ocp_analytics.refresh`);
        False evaluates every run from raw. The page is the same either way.

    Returns
    -------
    ReportFiles
        The page's path, the data folder and each figure's data file.

    Raises
    ------
    OcpAnalyticsError
        When the data is older than ``max_staleness``, or ``data_out`` holds
        the data of another page.
    MissingExtraError
        When altair, vl-convert-python or jinja2 is missing
        (``pip install 'ocp-analytics[report]'``).

    Examples
    --------
    >>> import ocp_analytics as oa, tempfile
    >>> tmp = tempfile.mkdtemp()
    >>> _ = oa.ingest("tests/data/examples/v0.3", tmp + "/ds")
    >>> files = oa.report(tmp + "/ds", "tests+review", by="task_type",
    ...                   as_of="2027-01-01T00:00:00Z", out=tmp + "/report.html")
    >>> files.html.name, sorted(files.data)[:3]
    ('report.html', ['attempts_distribution', 'compare_matrix', 'findings_by_code'])
    """
    require_extra()
    _check_format(data_format)
    ds = scan_at(dataset, snapshot)
    assert isinstance(ds, Dataset)  # a path or a Dataset, never tables in memory
    ctx = resolve_context(ds, rules, by, since, until, as_of, period, sample)
    ctx.decisions = use_decisions
    html = Path(out)
    folder = Path(data_out) if data_out is not None else html.with_name(f"{html.stem}-data")
    check_data_folder(folder, html)
    fresh = freshness(ctx)
    check_staleness(fresh, max_staleness, ctx.as_of)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        figs = build_figures(ctx)
    banners = list(dict.fromkeys(str(w.message) for w in caught))
    header = {**ctx.header(), "page": html.name, "freshness": fresh}
    files = ReportFiles(html, folder, write_data(figs, folder, data_format, header))
    extra = PageExtras(freshness=fresh, banners=banners)
    write_page(files, figs, ctx, title, str(getattr(dataset, "path", dataset)), data_format, extra)
    return files


def check_data_folder(folder: Path, html: Path) -> None:
    """Raise when ``folder`` holds the data of another page (its ``index.json`` names it).

    Two pages whose names share a stem (``nightly.html``, ``nightly.htm``), or a
    ``--data-out`` given twice, would otherwise write one page's figures over
    the other's.
    """
    index = folder / "index.json"
    if not index.is_file():
        return
    page = orjson.loads(index.read_bytes()).get("page")
    if page is not None and page != html.name:
        raise OcpAnalyticsError(
            hint(
                f"the data folder {str(folder)!r} holds the data of the page {page!r}, "
                f"not of {html.name!r}.",
                "pass --data-out with a folder of its own, or name the page differently.",
            )
        )
