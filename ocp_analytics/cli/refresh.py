"""``refresh``: keep the dataset's decisions for a rule set, deciding only what changed."""

from __future__ import annotations

from typing import Annotated

import typer

from ocp_analytics.cli.options import AsOfOpt, DatasetArg, RuleOpt, RulesOpt, as_of_arg, rules_arg


def refresh(
    dataset: DatasetArg,
    rules: RulesOpt = None,
    rule: RuleOpt = None,
    as_of: AsOfOpt = None,
    recorded: Annotated[bool, typer.Option(help="Keep each run's recorded rule too.")] = True,
) -> None:
    """Bring the dataset's stored decisions for these rules up to its newest commit.

    Each rule's acceptance rows (one per run, as `accept` writes them) are
    kept in the dataset, under decisions/<fingerprint>/, with the as_of they
    were decided at. A row is final once the run's window has closed, every
    signal and matched late event of the run was observed by its as_of, and
    nothing new about the run has arrived since: final rows are kept, every
    other row (new and replaced runs, runs with newly matched late events,
    open windows) is decided again. A rule never refreshed, or whose
    definition changed, and an --as-of before the last refresh's, are decided
    from raw. Beside the stores, the rule set's codes (decisions/set-<hex>/:
    a byte per run and rule, the runs' latest scores) let the report read one
    narrow table instead of every store. Safe to kill: each rule's store
    stays as its last refresh left it. Prints what was reused and decided.

    \b
    Examples:
      ocp-analytics refresh runs.dataset --rules team-bars.toml
      ocp-analytics refresh runs.dataset --rule tests+review --as-of 2026-12-01T00:00:00Z
      ocp-analytics ingest night/ --out runs.dataset   # then, every night:
      ocp-analytics refresh runs.dataset --rules team-bars.toml
    """
    from ocp_analytics.api.refresh import refresh as run

    summary = run(dataset, rules_arg(rules, rule), as_of=as_of_arg(as_of), recorded=recorded)
    typer.echo(str(summary))
    if summary.from_raw:
        typer.echo(f"decided from raw: {', '.join(summary.from_raw)}")
