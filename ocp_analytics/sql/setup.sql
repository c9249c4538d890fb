-- setup.sql: the ocp-analytics views over one dataset, for the DuckDB CLI.
--
-- GENERATED from the files named below by `python -m ocp_analytics.sql`;
-- edit those files, then regenerate (tests/test_sql_files.py checks it is current).
--
-- Usage (from any folder; the dataset path is the only input):
--   duckdb -c "SET VARIABLE ocp_dataset = '/path/to/dataset'" \
--          -c ".read sql/setup.sql" \
--          -c "SELECT * FROM rates"
-- Optional: SET VARIABLE ocp_as_of = TIMESTAMPTZ '2027-01-01 00:00:00+00';
-- (before or after setup; unset means now), and rows in alternative_rules.

-- ---- sql/setup/timezone.sql ----
-- timezone: pin the session time zone to UTC.
--
-- Purpose: naive timestamps, now() and TIMESTAMPTZ arithmetic must not depend
--   on the machine the query runs on (docs/figures.md "Times"; pitfalls note, DuckDB 2).
-- Parameters: none.
-- Output: none (a session setting).
SET TimeZone = 'UTC';

-- ---- sql/setup/check_dataset.sql ----
-- check_dataset: stop early, with a hint, when ocp_dataset is not set.
--
-- Purpose: every later statement reads the dataset folder from the variable
--   ocp_dataset; without it DuckDB's own errors ("glob cannot take NULL")
--   would not say what to do.
-- Parameters:
--   getvariable('ocp_dataset')  VARCHAR, the dataset folder (required).
-- Output: none (the variable is set again to its own value).
SET VARIABLE ocp_dataset = CASE
    WHEN getvariable('ocp_dataset') IS NULL THEN error(
        'ocp_dataset is not set. Hint: run SET VARIABLE ocp_dataset = ''/path/to/dataset''; '
        || 'before .read sql/setup.sql'
    )
    ELSE CAST(getvariable('ocp_dataset') AS VARCHAR)
END;

-- ---- sql/macros/ocp_literal_path.sql ----
-- ocp_literal_path(path): a file path DuckDB will read literally, never as a pattern.
--
-- Purpose: DuckDB globs every file name given to glob(), read_parquet() and
--   read_json(), even inside a list, so a dataset folder named
--   'odd[1]*?.dataset' would match other files (or none). Each glob
--   character is wrapped in a one-character class ('[' -> '[[]',
--   '*' -> '[*]', '?' -> '[?]'), which matches exactly that character.
--   Paths without those characters are returned unchanged.
-- Parameters:
--   path  VARCHAR, a file or folder path (literal).
-- Output: VARCHAR, the same path as a pattern that matches only itself.
-- Example: SELECT ocp_literal_path('runs[1]/*.json');  -- 'runs[[]1]/[*].json'
CREATE OR REPLACE MACRO ocp_literal_path(path) AS
regexp_replace(path, '([\[*?])', '[\1]', 'g');

-- ---- sql/setup/batch_files.sql ----
-- batch_files: the dataset's commit records, as the variable ocp_batch_files.
--
-- Purpose: list DATASET/_batches/*.json (one commit record per ingested
--   batch; dataset.py). Only files listed by these records belong to the
--   dataset. glob() is used rather than a glob inside read_json so that a
--   dataset with no batch yet gives an empty list instead of an error. The
--   folder part of the pattern is escaped (ocp_literal_path), so a dataset
--   path holding '[', '*' or '?' is read literally. With ocp_snapshot set,
--   only the records of commits up to that seq (a record is named by its
--   seq: NNNNNNNN.json) are listed: the dataset as that commit left it, late
--   events included (docs/dataset.md, "Snapshots"); a record named otherwise
--   is kept, as store/commits.py keeps it.
-- Parameters:
--   getvariable('ocp_dataset')   VARCHAR, the dataset folder.
--   getvariable('ocp_snapshot')  BIGINT or unset (NULL): the last commit read.
-- Output: variable ocp_batch_files VARCHAR[] (literal file names, commit order).
SET VARIABLE ocp_batch_files = (
    SELECT coalesce(list(file ORDER BY file), [])
    FROM glob(ocp_literal_path(getvariable('ocp_dataset')) || '/_batches/*.json')
    WHERE getvariable('ocp_snapshot') IS NULL
       OR coalesce(
            TRY_CAST(regexp_extract(file, '/([0-9]+)\.json$', 1) AS BIGINT)
                <= getvariable('ocp_snapshot'),
            true
          )
);

-- ---- sql/setup/table_files.sql ----
-- table_files: the committed Parquet parts of every table, as the variable ocp_files.
--
-- Purpose: read the commit records listed in ocp_batch_files and gather, per
--   table, the part files they list (paths relative to the dataset folder).
--   Each list ends with _schema/<table>.parquet, an empty file holding the
--   table's schema, so a table with no committed part still has its columns.
--   It comes last because DuckDB estimates a scan's size from the first file:
--   first, every table read as empty and joins picked their sides blind.
--   Parts on disk that no record lists (crash leftovers) are never read,
--   nor parts a compaction's record lists under replaces (its own parts
--   hold their rows; store/maintenance.py): with ocp_snapshot before the
--   compaction, its record is not read and the old parts are.
--   The list is a snapshot: run setup again to see batches committed later.
--   Every path is escaped (ocp_literal_path) before read_json, which globs.
-- Parameters:
--   getvariable('ocp_dataset')      VARCHAR, the dataset folder.
--   getvariable('ocp_batch_files')  VARCHAR[], set by batch_files.sql.
-- Output: variable ocp_files MAP(VARCHAR, VARCHAR[]): table name -> part
--   files relative to the dataset folder, keys runs, attempts, signals,
--   rules, artifacts, findings, quarantine, events.
SET VARIABLE ocp_files = (
    WITH lists AS (
        SELECT
            flatten(list(files.runs       ORDER BY seq)) AS listed_runs,
            flatten(list(replaces.runs      )) AS gone_runs,
            flatten(list(files.attempts   ORDER BY seq)) AS listed_attempts,
            flatten(list(replaces.attempts  )) AS gone_attempts,
            flatten(list(files.signals    ORDER BY seq)) AS listed_signals,
            flatten(list(replaces.signals   )) AS gone_signals,
            flatten(list(files.rules      ORDER BY seq)) AS listed_rules,
            flatten(list(replaces.rules     )) AS gone_rules,
            flatten(list(files.artifacts  ORDER BY seq)) AS listed_artifacts,
            flatten(list(replaces.artifacts )) AS gone_artifacts,
            flatten(list(files.findings   ORDER BY seq)) AS listed_findings,
            flatten(list(replaces.findings  )) AS gone_findings,
            flatten(list(files.quarantine ORDER BY seq)) AS listed_quarantine,
            flatten(list(replaces.quarantine)) AS gone_quarantine,
            flatten(list(files.events     ORDER BY seq)) AS listed_events,
            flatten(list(replaces.events    )) AS gone_events
        FROM read_json(
            -- the format marker is always present, so the list is never empty
            list_transform(
                [getvariable('ocp_dataset') || '/ocp-dataset.json'] || getvariable('ocp_batch_files'),
                lambda path: ocp_literal_path(path)
            ),
            columns = {
                seq: 'BIGINT',
                files: 'STRUCT(runs VARCHAR[], attempts VARCHAR[], signals VARCHAR[], rules VARCHAR[], artifacts VARCHAR[], findings VARCHAR[], quarantine VARCHAR[], events VARCHAR[])',
                replaces: 'STRUCT(runs VARCHAR[], attempts VARCHAR[], signals VARCHAR[], rules VARCHAR[], artifacts VARCHAR[], findings VARCHAR[], quarantine VARCHAR[], events VARCHAR[])'
            }
        )
        WHERE files IS NOT NULL
    )
    SELECT MAP {
        'runs':       coalesce(list_filter(listed_runs, lambda f: NOT list_contains(coalesce(gone_runs, []), f)), [])
            || ['_schema/runs.parquet'],
        'attempts':   coalesce(list_filter(listed_attempts, lambda f: NOT list_contains(coalesce(gone_attempts, []), f)), [])
            || ['_schema/attempts.parquet'],
        'signals':    coalesce(list_filter(listed_signals, lambda f: NOT list_contains(coalesce(gone_signals, []), f)), [])
            || ['_schema/signals.parquet'],
        'rules':      coalesce(list_filter(listed_rules, lambda f: NOT list_contains(coalesce(gone_rules, []), f)), [])
            || ['_schema/rules.parquet'],
        'artifacts':  coalesce(list_filter(listed_artifacts, lambda f: NOT list_contains(coalesce(gone_artifacts, []), f)), [])
            || ['_schema/artifacts.parquet'],
        'findings':   coalesce(list_filter(listed_findings, lambda f: NOT list_contains(coalesce(gone_findings, []), f)), [])
            || ['_schema/findings.parquet'],
        'quarantine': coalesce(list_filter(listed_quarantine, lambda f: NOT list_contains(coalesce(gone_quarantine, []), f)), [])
            || ['_schema/quarantine.parquet'],
        'events':     coalesce(list_filter(listed_events, lambda f: NOT list_contains(coalesce(gone_events, []), f)), [])
            || ['_schema/events.parquet']
    }
    FROM lists
);

-- ---- sql/setup/superseding.sql ----
-- superseding: how many committed runs replaced an earlier version, as the variable ocp_superseding.
--
-- Purpose: sum the superseding count of every commit record (dataset.py
--   writes it: runs of the batch whose run_id was already stored with other
--   content). While it is 0 no run_id has two versions, so every stored row
--   is of a current version and the views can skip the current_docs filter
--   (ocp_current_versions), as the polars engine does. A record without the
--   count (written by another tool) counts as superseding, so the filter
--   stays on.
-- Parameters:
--   getvariable('ocp_batch_files')  VARCHAR[], set by batch_files.sql.
-- Output: variable ocp_superseding BIGINT (0 when nothing was superseded).
SET VARIABLE ocp_superseding = (
    SELECT coalesce(sum(coalesce(superseding, 1)), 0)
    FROM read_json(
        -- the format marker is always present, so the list is never empty
        list_transform(
            [getvariable('ocp_dataset') || '/ocp-dataset.json'] || getvariable('ocp_batch_files'),
            lambda path: ocp_literal_path(path)
        ),
        columns = {seq: 'BIGINT', superseding: 'BIGINT'}
    )
    WHERE seq IS NOT NULL
);

-- ---- sql/setup/alternative_rules.sql ----
-- alternative_rules: the user's alternative acceptance rules (empty by default).
--
-- Purpose: every row is evaluated against every run by the acceptance view,
--   next to each run's recorded rule. Insert rows to compare bars, e.g.
--     INSERT INTO alternative_rules (name, requires) VALUES ('tests+review', ['tests', 'review']);
--     INSERT INTO alternative_rules (name, score_name, score_target, score_better)
--         VALUES ('runtime_s<=3600', 'runtime_s', 3600, 'lower');
--   NULL means "absent", with the defaults of docs/figures.md "The rule": requires [] (no
--   verdict needed; duplicate names count once), no score part,
--   excludes_events ['revert', 'incident'] ([] means no event excludes),
--   window_days 14. score_scale does not change any figure.
--   Kept across a second run of setup (CREATE TABLE IF NOT EXISTS).
-- Parameters: none.
-- Output columns: name VARCHAR (unique, not 'recorded'), definition VARCHAR,
--   requires VARCHAR[], score_name VARCHAR, score_target DOUBLE,
--   score_better VARCHAR ('higher' | 'lower'), score_scale VARCHAR,
--   excludes_events VARCHAR[], window_days BIGINT (>= 0).
CREATE TABLE IF NOT EXISTS alternative_rules (
    name VARCHAR PRIMARY KEY CHECK (name <> 'recorded'),
    definition VARCHAR,
    requires VARCHAR[],
    score_name VARCHAR,
    score_target DOUBLE,
    score_better VARCHAR CHECK (score_better IN ('higher', 'lower')),
    score_scale VARCHAR,
    excludes_events VARCHAR[],
    window_days BIGINT CHECK (window_days >= 0),
    CHECK (score_name IS NULL OR (score_target IS NOT NULL AND score_better IS NOT NULL))
);

-- ---- sql/macros/ocp_all_versions.sql ----
-- ocp_all_versions(table_name): every committed row of a table, all run versions.
--
-- Purpose: read the committed Parquet parts of one table (ocp_files) plus
--   its empty schema file, each path escaped (ocp_literal_path) so that
--   read_parquet reads it literally. Older versions of re-ingested runs are still
--   here; the views runs, attempts, … keep current versions only. The audit
--   queries in sql/checks/ read this to find what the views hide.
-- Parameters:
--   table_name                  VARCHAR, one of runs, attempts, signals,
--                               rules, artifacts, findings, quarantine.
--   getvariable('ocp_dataset')  VARCHAR, the dataset folder.
--   getvariable('ocp_files')    MAP(VARCHAR, VARCHAR[]), set by table_files.sql.
-- Output columns: those of the table's schema (ocp_analytics/schemas.py).
-- Example: SELECT count(*) FROM ocp_all_versions('runs');
CREATE OR REPLACE MACRO ocp_all_versions(table_name) AS TABLE
SELECT *
FROM read_parquet(
    CASE
        WHEN getvariable('ocp_files') IS NULL THEN error(
            'the ocp-analytics views are not set up in this session. Hint: run '
            || 'SET VARIABLE ocp_dataset = ''/path/to/dataset''; then .read sql/setup.sql '
            || '(DuckDB variables last one session, even in a database file).'
        )
        WHEN getvariable('ocp_files')[table_name] IS NULL THEN error(
            'ocp_all_versions: no table ' || table_name || '. Hint: use runs, attempts, '
            || 'signals, rules, artifacts, findings or quarantine.'
        )
        ELSE list_transform(
            getvariable('ocp_files')[table_name],
            lambda part: ocp_literal_path(getvariable('ocp_dataset') || '/' || part)
        )
    END
);

-- ---- sql/macros/ocp_run_rows.sql ----
-- ocp_run_rows(): the (doc_id, run_id) of every row of the per-run tables, all run versions.
--
-- Purpose: what the audit queries in sql/checks/ compare with the runs
--   rows: every attempts, signals, rules, artifacts and findings row
--   belongs to one version of one run (its doc_id) and names that run
--   (run_id). Read from ocp_all_versions, so rows the views hide are here.
-- Parameters: none (reads ocp_all_versions).
-- Output: table_name VARCHAR, doc_id BIGINT, run_id VARCHAR (one row per
--   stored row).
-- Example: SELECT table_name, count(*) FROM ocp_run_rows() GROUP BY ALL;
CREATE OR REPLACE MACRO ocp_run_rows() AS TABLE
SELECT 'attempts' AS table_name, doc_id, run_id FROM ocp_all_versions('attempts')
UNION ALL
SELECT 'signals', doc_id, run_id FROM ocp_all_versions('signals')
UNION ALL
SELECT 'rules', doc_id, run_id FROM ocp_all_versions('rules')
UNION ALL
SELECT 'artifacts', doc_id, run_id FROM ocp_all_versions('artifacts')
UNION ALL
SELECT 'findings', doc_id, run_id FROM ocp_all_versions('findings');

-- ---- sql/macros/ocp_as_of.sql ----
-- ocp_as_of(): the instant of knowledge (docs/figures.md "as_of").
--
-- Purpose: one place that reads the as_of parameter; every as_of-dependent
--   view calls it (latest_signals and run_features set aside the signals
--   and events observed after it; acceptance judges the open window at
--   it), and acceptance writes it into its as_of column so a report can be
--   reproduced.
-- Parameters:
--   getvariable('ocp_as_of')  TIMESTAMPTZ (or text such as
--                             '2027-01-01T00:00:00Z'; a value without an
--                             offset reads as UTC). Unset: now(), to the second.
-- Output: TIMESTAMPTZ.
CREATE OR REPLACE MACRO ocp_as_of() AS
coalesce(CAST(getvariable('ocp_as_of') AS TIMESTAMPTZ), date_trunc('second', now()));

-- ---- sql/macros/ocp_tier_rank.sql ----
-- ocp_tier_rank(tier): rank of an evidence tier word (docs/figures.md "tier and q").
--
-- GENERATED from ocp_analytics.schemas (OUTCOME_TIERS, TIER_Q) by
--   `python -m ocp_analytics.sql`: edit schemas.py, then regenerate.
-- Purpose: verified 0, reported 1, heuristic 2, asserted 3; compared
--   lower-cased; a missing or unknown word reads as asserted (3).
-- Parameters: tier VARCHAR.
-- Output: INTEGER 0..3 (higher is weaker).
CREATE OR REPLACE MACRO ocp_tier_rank(tier) AS
CASE lower(tier)
    WHEN 'verified' THEN 0
    WHEN 'reported' THEN 1
    WHEN 'heuristic' THEN 2
    ELSE 3
END;

-- ---- sql/macros/ocp_tier_word.sql ----
-- ocp_tier_word(tier_rank): the tier word of a rank (docs/figures.md "tier and q").
--
-- GENERATED from ocp_analytics.schemas (OUTCOME_TIERS, TIER_Q) by
--   `python -m ocp_analytics.sql`: edit schemas.py, then regenerate.
-- Purpose: turn the weakest rank used back into its word; nothing used (NULL)
--   reads asserted.
-- Parameters: tier_rank INTEGER 0..3, or NULL (nothing used).
-- Output: VARCHAR verified | reported | heuristic | asserted (NULL reads
--   asserted).
CREATE OR REPLACE MACRO ocp_tier_word(tier_rank) AS
CASE tier_rank
    WHEN 0 THEN 'verified'
    WHEN 1 THEN 'reported'
    WHEN 2 THEN 'heuristic'
    ELSE 'asserted'
END;

-- ---- sql/macros/ocp_tier_q.sql ----
-- ocp_tier_q(tier_rank): q of a tier rank (docs/figures.md "tier and q").
--
-- GENERATED from ocp_analytics.schemas (OUTCOME_TIERS, TIER_Q) by
--   `python -m ocp_analytics.sql`: edit schemas.py, then regenerate.
-- Purpose: the q written next to every outcome: 0.98 for verified, 0.95 for
--   reported, 0.8 for heuristic, 0.7 for asserted.
-- Parameters: tier_rank INTEGER 0..3, or NULL (nothing used).
-- Output: DOUBLE 0.98 | 0.95 | 0.8 | 0.7 (NULL reads asserted, 0.7).
CREATE OR REPLACE MACRO ocp_tier_q(tier_rank) AS
CASE tier_rank
    WHEN 0 THEN CAST('0.98' AS DOUBLE)
    WHEN 1 THEN CAST('0.95' AS DOUBLE)
    WHEN 2 THEN CAST('0.8' AS DOUBLE)
    ELSE CAST('0.7' AS DOUBLE)
END;

-- ---- sql/macros/ocp_verdict_state.sql ----
-- ocp_verdict_state(value_text): what a verdict value says (docs/figures.md "outcome and reasons").
--
-- Purpose: lower-cased, 'accept' or 'pass' reads 'pass'; 'reject' or 'fail'
--   reads 'fail'; anything else ('error', 'approved', '', NULL, the JSON
--   text of a non-string value such as '1' or 'true') reads NULL (unknown).
-- Parameters: value_text VARCHAR.
-- Output: VARCHAR 'pass' | 'fail' | NULL.
CREATE OR REPLACE MACRO ocp_verdict_state(value_text) AS
CASE
    WHEN lower(value_text) IN ('accept', 'pass') THEN 'pass'
    WHEN lower(value_text) IN ('reject', 'fail') THEN 'fail'
END;

-- ---- sql/macros/ocp_signal_order.sql ----
-- ocp_signal_order(observed_at, sig_idx): the order in which signals become "the latest" (docs/figures.md "Which signal counts").
--
-- Purpose: one sort key, so that arg_max(x, ocp_signal_order(...)) picks
--   the latest signal of a group: an unknown time sorts before every known
--   one, then the instant (equal instants written with different offsets
--   are ties), then the position in run.signals. A single HUGEINT
--   (epoch µs × 2^32 + sig_idx; unknown time reads as -(2^63 - 1), below every real instant)
--   keeps the aggregate state fixed-size and small, which a ROW key does not.
-- Parameters: observed_at TIMESTAMPTZ (NULL = unknown time),
--   sig_idx INTEGER (>= 0, the position in run.signals).
-- Output: HUGEINT, larger is later.
CREATE OR REPLACE MACRO ocp_signal_order(observed_at, sig_idx) AS
CAST(coalesce(epoch_us(observed_at), -9223372036854775807) AS HUGEINT) * 4294967296
+ sig_idx;

-- ---- sql/macros/ocp_z95.sql ----
-- ocp_z95(): the z of a two-sided 95 % interval, as in ocp_analytics.engine.rates.Z95.
--
-- Purpose: one place for the constant, parsed from text so the double is
--   exactly Python's float('1.959963984540054').
-- Parameters: none.
-- Output: DOUBLE 1.959963984540054.
CREATE OR REPLACE MACRO ocp_z95() AS CAST('1.959963984540054' AS DOUBLE);

-- ---- sql/macros/ocp_wilson.sql ----
-- ocp_wilson(successes, n, side): one bound of the 95 % Wilson score interval.
--
-- Purpose: the interval on accept_rate (docs/figures.md, "The Wilson interval"). The operations and
--   their order are those of ocp_analytics.engine.rates.wilson, so both engines give
--   the same doubles: with p = successes / n,
--     centre = (p + z²/(2n)) / (1 + z²/n)
--     half   = z · sqrt(p(1 − p)/n + z²/(4n²)) / (1 + z²/n)
--   and the bound is centre − half ('low') or centre + half ('high').
-- Parameters: successes BIGINT, n BIGINT (NULL result when n = 0),
--   side 'low' or 'high' (the numbers -1 and 1 are read the same way).
-- Output: DOUBLE.
CREATE OR REPLACE MACRO ocp_wilson(successes, n, side) AS
CASE WHEN n > 0 THEN
    (CAST(successes AS DOUBLE) / CAST(n AS DOUBLE) + ocp_z95() * ocp_z95() / (2 * CAST(n AS DOUBLE)))
        / (1 + ocp_z95() * ocp_z95() / CAST(n AS DOUBLE))
    + CASE CAST(side AS VARCHAR)
        WHEN 'low' THEN -1 WHEN '-1' THEN -1 WHEN 'high' THEN 1 WHEN '1' THEN 1
        ELSE error('ocp_wilson: side is ' || coalesce('''' || CAST(side AS VARCHAR) || '''', 'NULL')
            || '. Hint: use ''low'' or ''high''.')
    END * (
        ocp_z95() * sqrt(
            CAST(successes AS DOUBLE) / CAST(n AS DOUBLE)
                * (1 - CAST(successes AS DOUBLE) / CAST(n AS DOUBLE)) / CAST(n AS DOUBLE)
            + ocp_z95() * ocp_z95() / (4 * CAST(n AS DOUBLE) * CAST(n AS DOUBLE))
        )
        / (1 + ocp_z95() * ocp_z95() / CAST(n AS DOUBLE))
    )
END;

-- ---- sql/macros/ocp_rate_counts.sql ----
-- ocp_rate_counts(outcome, attempts_to_acceptance, accepted_attempt_n, tier, window_open, as_of): what rates count in one group of acceptance rows (docs/figures.md "Per group: rates").
--
-- Purpose: the one home of the aggregates behind every rates figure
--   (views/rates.sql and sql/queries/rates_by*.sql). An aggregate macro: it
--   is expanded where it is called, so count(*) counts the rows of the
--   caller's group (one group per rule, or per group and rule). Pass the
--   struct to ocp_rate_figures for the published columns.
-- Parameters: the acceptance columns of those names (outcome VARCHAR,
--   attempts_to_acceptance BIGINT, accepted_attempt_n BIGINT, tier VARCHAR,
--   window_open BOOLEAN, as_of TIMESTAMPTZ); outcome may already read
--   'unknown' for a tier below ocp_min_tier.
-- Output: STRUCT(runs, accepted, rejected, unknown, provisional BIGINT,
--   attempts_mean DOUBLE (of accepted runs), attempts_median DOUBLE (their
--   quantile_cont 0.5: the mean of the two middle values, as polars' median),
--   with_attempts BIGINT (accepted runs with a known attempts_to_acceptance),
--   at_first BIGINT (of those, accepted at their first attempt),
--   at_first_of_node BIGINT (of those, accepted_attempt_n = 1),
--   tier_verified, tier_reported, tier_heuristic, tier_asserted BIGINT
--   (decided runs, accepted or rejected, by tier), as_of TIMESTAMPTZ).
-- Example: SELECT rule, ocp_rate_counts(outcome, attempts_to_acceptance,
--   accepted_attempt_n, tier, window_open, as_of) FROM acceptance GROUP BY rule;
CREATE OR REPLACE MACRO ocp_rate_counts(
    outcome, attempts_to_acceptance, accepted_attempt_n, tier, window_open, as_of
) AS {
    'runs': count(*),
    'accepted': count(*) FILTER (WHERE outcome = 'accepted'),
    'rejected': count(*) FILTER (WHERE outcome = 'rejected'),
    'unknown': count(*) FILTER (WHERE outcome = 'unknown'),
    'provisional': count(*) FILTER (WHERE outcome = 'accepted' AND window_open),
    'attempts_mean': avg(attempts_to_acceptance) FILTER (WHERE outcome = 'accepted'),
    'attempts_median':
        quantile_cont(attempts_to_acceptance, 0.5) FILTER (WHERE outcome = 'accepted'),
    'with_attempts': count(attempts_to_acceptance) FILTER (WHERE outcome = 'accepted'),
    'at_first': count(*) FILTER (WHERE outcome = 'accepted' AND attempts_to_acceptance = 1),
    'at_first_of_node': count(*) FILTER (
        WHERE outcome = 'accepted' AND attempts_to_acceptance IS NOT NULL
        AND accepted_attempt_n = 1
    ),
    'tier_verified':
        count(*) FILTER (WHERE outcome IN ('accepted', 'rejected') AND tier = 'verified'),
    'tier_reported':
        count(*) FILTER (WHERE outcome IN ('accepted', 'rejected') AND tier = 'reported'),
    'tier_heuristic':
        count(*) FILTER (WHERE outcome IN ('accepted', 'rejected') AND tier = 'heuristic'),
    'tier_asserted':
        count(*) FILTER (WHERE outcome IN ('accepted', 'rejected') AND tier = 'asserted'),
    'as_of': any_value(as_of)
};

-- ---- sql/macros/ocp_rate_figures.sql ----
-- ocp_rate_figures(counts): the published rates columns of one group, from its ocp_rate_counts (docs/figures.md "Per group: rates").
--
-- Purpose: the one home of the final rates computation, shared by
--   views/rates.sql and sql/queries/rates_by*.sql (the twin of
--   ocp_analytics.engine.rates.combine). A caller writes its group columns
--   and rule, then unnest(ocp_rate_figures(counts)), which spreads the
--   struct into columns (in a query of its own: DuckDB refuses UNNEST of a
--   struct next to GROUP BY ALL, so the counts come from a CTE).
-- Parameters: counts, the struct of ocp_rate_counts for the group.
-- Output: STRUCT of the columns of the rates view after rule (runs,
--   accepted, …, as_of): their names, types and order, and the meaning
--   views/rates.sql gives each.
CREATE OR REPLACE MACRO ocp_rate_figures(counts) AS {
    'runs': counts.runs,
    'accepted': counts.accepted,
    'rejected': counts.rejected,
    'unknown': counts.unknown,
    'accept_rate': CASE
        WHEN counts.accepted + counts.rejected > 0
            THEN CAST(counts.accepted AS DOUBLE) / (counts.accepted + counts.rejected)
    END,
    'ci_low': ocp_wilson(counts.accepted, counts.accepted + counts.rejected, 'low'),
    'ci_high': ocp_wilson(counts.accepted, counts.accepted + counts.rejected, 'high'),
    'decided_share': CAST(counts.accepted + counts.rejected AS DOUBLE) / counts.runs,
    'attempts_mean': counts.attempts_mean,
    'attempts_median': counts.attempts_median,
    'first_attempt_share': CASE
        WHEN counts.with_attempts > 0
            THEN CAST(counts.at_first AS DOUBLE) / counts.with_attempts
    END,
    'first_node_attempt_share': CASE
        WHEN counts.with_attempts > 0
            THEN CAST(counts.at_first_of_node AS DOUBLE) / counts.with_attempts
    END,
    'provisional': counts.provisional,
    'tier_verified': counts.tier_verified,
    'tier_reported': counts.tier_reported,
    'tier_heuristic': counts.tier_heuristic,
    'tier_asserted': counts.tier_asserted,
    'as_of': counts.as_of
};

-- ---- sql/views/current_docs.sql ----
-- current_docs: the doc_id of the current version of every run.
--
-- Purpose: a run id ingested again with new content gets a new doc_id; its
--   current version is the one with the largest doc_id among the runs rows
--   of that run_id (dataset.py). Every per-run view keeps only rows of these
--   doc_ids, so older versions never count twice.
-- Parameters: none (reads ocp_all_versions('runs')).
-- Output columns: run_id VARCHAR, doc_id BIGINT (one row per run_id).
CREATE OR REPLACE VIEW current_docs AS
SELECT run_id, max(doc_id) AS doc_id
FROM ocp_all_versions('runs')
GROUP BY run_id;

-- ---- sql/macros/ocp_current_versions.sql ----
-- ocp_current_versions(table_name): the rows of a table that belong to the current version of their run.
--
-- Purpose: the rows whose doc_id is a current doc_id (current_docs). When
--   no commit record superseded a run (ocp_superseding = 0) every stored
--   row is current and the filter is skipped: the two branches test a
--   variable, a constant for the planner, which drops the branch that
--   cannot return rows, so the runs are not grouped by run_id for every
--   table a query reads. Rows of no run at all (a damaged dataset) are then
--   kept, as the polars engine keeps them; sql/checks/orphan_rows.sql finds
--   them.
-- Parameters:
--   table_name                     VARCHAR, as for ocp_all_versions.
--   getvariable('ocp_superseding') BIGINT, set by setup/superseding.sql.
-- Output columns: those of the table's schema (ocp_analytics/schemas.py).
-- Example: SELECT count(*) FROM ocp_current_versions('signals');
CREATE OR REPLACE MACRO ocp_current_versions(table_name) AS TABLE
SELECT *
FROM ocp_all_versions(table_name)
WHERE getvariable('ocp_superseding') = 0
UNION ALL
SELECT *
FROM ocp_all_versions(table_name)
WHERE getvariable('ocp_superseding') <> 0 AND doc_id IN (SELECT doc_id FROM current_docs);

-- ---- sql/views/runs.sql ----
-- runs: the current version of every run, one row per run_id.
--
-- Purpose: the runs rows whose doc_id is the current doc_id of their run
--   (current_docs, through ocp_current_versions). The audit
--   sql/checks/duplicate_current_runs.sql makes sure no run_id has two
--   such rows.
-- Parameters: none (reads ocp_current_versions('runs')).
-- Output columns: those of ocp_analytics.schemas.RUNS (run_id VARCHAR,
--   doc_id BIGINT, ocp_version, …, started_at TIMESTAMPTZ, …, ended_at
--   TIMESTAMPTZ, …, labels MAP(VARCHAR, VARCHAR), task_id, task_type, …,
--   repo, org, …, rule_name, …, batch_id).
CREATE OR REPLACE VIEW runs AS
SELECT *
FROM ocp_current_versions('runs');

-- ---- sql/views/attempts.sql ----
-- attempts: the attempts rows of the current version of every run.
--
-- Purpose: keep only rows whose doc_id is a current doc_id (current_docs,
--   through ocp_current_versions: skipped when no run was ever superseded);
--   rows of older versions are left out (the audit queries in sql/checks/
--   look for them, and for rows of no run at all).
-- Parameters: none (reads ocp_current_versions('attempts')).
-- Output columns: those of ocp_analytics.schemas.ATTEMPTS (run_id VARCHAR,
--   doc_id BIGINT, att_idx INTEGER (position in the document's attempts),
--   attempt_id, node VARCHAR, n, round BIGINT, status VARCHAR, started_at
--   TIMESTAMPTZ, …, ended_at TIMESTAMPTZ, …, cost_usd DOUBLE, input_tokens,
--   cached_input_tokens, cache_creation_tokens, output_tokens,
--   reasoning_tokens BIGINT).
CREATE OR REPLACE VIEW attempts AS
SELECT *
FROM ocp_current_versions('attempts');

-- ---- sql/views/signals.sql ----
-- signals: the signals rows of the current version of every run.
--
-- Purpose: keep only rows whose doc_id is a current doc_id (current_docs,
--   through ocp_current_versions: skipped when no run was ever superseded);
--   rows of older versions are left out (the audit queries in sql/checks/
--   look for them, and for rows of no run at all).
-- Parameters: none (reads ocp_current_versions('signals')).
-- Output columns: those of ocp_analytics.schemas.SIGNALS (run_id VARCHAR,
--   doc_id BIGINT, sig_idx INTEGER (position in run.signals), signal_id,
--   kind, name, value_text VARCHAR, value_num DOUBLE (JSON numbers only),
--   value_json VARCHAR, …, at_attempt VARCHAR, …, observed_at TIMESTAMPTZ,
--   …, tier VARCHAR).
CREATE OR REPLACE VIEW signals AS
SELECT *
FROM ocp_current_versions('signals');

-- ---- sql/views/rules.sql ----
-- rules: the rules rows of the current version of every run.
--
-- Purpose: keep only rows whose doc_id is a current doc_id (current_docs,
--   through ocp_current_versions: skipped when no run was ever superseded);
--   rows of older versions are left out (the audit queries in sql/checks/
--   look for them, and for rows of no run at all).
-- Parameters: none (reads ocp_current_versions('rules')).
-- Output columns: those of ocp_analytics.schemas.RULES (run_id VARCHAR,
--   doc_id BIGINT, name, definition VARCHAR, requires VARCHAR[], score_name
--   VARCHAR, score_target DOUBLE, score_better, score_scale VARCHAR,
--   excludes_events VARCHAR[], window_days BIGINT, valid BOOLEAN,
--   invalid_reason VARCHAR); a run with no recorded rule has no row.
CREATE OR REPLACE VIEW rules AS
SELECT *
FROM ocp_current_versions('rules');

-- ---- sql/views/artifacts.sql ----
-- artifacts: the artifacts rows of the current version of every run.
--
-- Purpose: keep only rows whose doc_id is a current doc_id (current_docs,
--   through ocp_current_versions: skipped when no run was ever superseded);
--   rows of older versions are left out (the audit queries in sql/checks/
--   look for them, and for rows of no run at all).
-- Parameters: none (reads ocp_current_versions('artifacts')).
-- Output columns: those of ocp_analytics.schemas.ARTIFACTS (run_id VARCHAR,
--   doc_id BIGINT, art_idx INTEGER, artifact_id, path, kind, producer VARCHAR,
--   first_write_at TIMESTAMPTZ, first_write_at_raw VARCHAR).
CREATE OR REPLACE VIEW artifacts AS
SELECT *
FROM ocp_current_versions('artifacts');

-- ---- sql/views/findings.sql ----
-- findings: the findings rows of the current version of every run.
--
-- Purpose: keep only rows whose doc_id is a current doc_id (current_docs,
--   through ocp_current_versions: skipped when no run was ever superseded);
--   rows of older versions are left out (the audit queries in sql/checks/
--   look for them, and for rows of no run at all).
-- Parameters: none (reads ocp_current_versions('findings')).
-- Output columns: those of ocp_analytics.schemas.FINDINGS (run_id VARCHAR,
--   doc_id BIGINT, code, json_path, message, source_path VARCHAR,
--   source_line, source_index BIGINT).
CREATE OR REPLACE VIEW findings AS
SELECT *
FROM ocp_current_versions('findings');

-- ---- sql/views/quarantine.sql ----
-- quarantine: every document that could not be read as a run.
--
-- Purpose: quarantine is not per run (a quarantined document has no doc_id),
--   so every committed row is kept.
-- Parameters: none (reads ocp_all_versions('quarantine')).
-- Output columns: those of ocp_analytics.schemas.QUARANTINE (batch_id,
--   source_path VARCHAR, source_line, source_index BIGINT, code, message,
--   json_path, raw_head VARCHAR).
CREATE OR REPLACE VIEW quarantine AS
SELECT *
FROM ocp_all_versions('quarantine');

-- ---- sql/views/events.sql ----
-- events: every stored late event (docs/figures.md "Late events that arrive apart from the run"), matched to a run or not.
--
-- Purpose: late events arrive apart from their run (ocp-analytics
--   ingest-events); each is stored once by event_id (the first stored record
--   wins), so every committed row is current. They are matched to runs at
--   read time (matched_events), never when written.
-- Parameters: none (reads ocp_all_versions('events')).
-- Output columns: those of ocp_analytics.schemas.EVENTS (event_id, commit,
--   kind ('event'), name, value_text VARCHAR, observed_at TIMESTAMPTZ (NULL
--   when absent or unreadable), observed_at_raw, source_kind, source_ref,
--   tier, batch_id, source_path VARCHAR, source_line, source_index BIGINT).
CREATE OR REPLACE VIEW events AS
SELECT *
FROM ocp_all_versions('events');

-- ---- sql/views/matched_events.sql ----
-- matched_events: late events matched to the current runs they concern (docs/figures.md "Late events that arrive apart from the run").
--
-- Purpose: a run names its commits by its artifacts whose kind is 'commit'
--   or 'merge' (the artifact's path, else its id); an event about one of
--   them is treated as if appended to the run's signals. One commit shared
--   by several runs matches each; a run naming one commit twice matches the
--   event once. sig_idx places matched events after every signal of the run
--   (2^32 + their rank), ranked by observed_at (unknown first), then
--   event_id: the order of ocp_analytics.engine.features.matched_events. An event
--   signal row of run_features.events is (sig_idx, name, observed_at,
--   tier_rank) of these rows, with the as_of filter applied as to signals.
-- Parameters: none (reads events, artifacts).
-- Output columns: doc_id BIGINT, run_id VARCHAR, event_id VARCHAR,
--   commit VARCHAR, kind VARCHAR, name VARCHAR, sig_idx BIGINT,
--   observed_at TIMESTAMPTZ, tier VARCHAR.
CREATE OR REPLACE VIEW matched_events AS
WITH commits AS (
    SELECT DISTINCT doc_id, run_id, coalesce(path, artifact_id) AS commit
    FROM artifacts
    WHERE kind IN ('commit', 'merge') AND coalesce(path, artifact_id) IS NOT NULL
)
SELECT
    c.doc_id,
    c.run_id,
    e.event_id,
    e.commit,
    e.kind,
    e.name,
    CAST(4294967296 AS BIGINT) + row_number() OVER (
        PARTITION BY c.doc_id
        ORDER BY e.observed_at IS NOT NULL, e.observed_at, e.event_id
    ) - 1 AS sig_idx,
    e.observed_at,
    e.tier
FROM events AS e
JOIN commits AS c ON c.commit = e.commit
WHERE e.kind = 'event';

-- ---- sql/views/unmatched_events.sql ----
-- unmatched_events: stored late events that concern no current run.
--
-- Purpose: an event whose commit is named by no current run's 'commit' or
--   'merge' artifact (path, else id) counts for no run yet; a run naming the
--   commit may still arrive, and is matched when it does (matched_events).
--   The same list as ocp_analytics.unmatched_events.
-- Parameters: none (reads events, artifacts).
-- Output columns: those of the events view.
CREATE OR REPLACE VIEW unmatched_events AS
SELECT *
FROM events
WHERE commit NOT IN (
    SELECT coalesce(path, artifact_id)
    FROM artifacts
    WHERE kind IN ('commit', 'merge') AND coalesce(path, artifact_id) IS NOT NULL
);

-- ---- sql/views/attempt_positions.sql ----
-- attempt_positions: where each attempt id of a run version stands (docs/figures.md "The attempt at acceptance").
--
-- Purpose: order the run's attempts by started_at with an unknown time LAST,
--   then by position in the document (att_idx). pos is the 1-based place in
--   that order, counting every attempt (parallel copies, other nodes, and
--   attempts without an id). n is the attempt's own n or, when absent, its
--   1-based place among attempts of the same node (attempts without a node
--   form one group). When ids repeat, the first in that order wins.
-- Parameters: none.
-- Output columns:
--   doc_id BIGINT, attempt_id VARCHAR (never NULL)
--   pos BIGINT    1-based position among all attempts of the run
--   n BIGINT      n, or the position within the node
--   round BIGINT  round as written (NULL when absent)
--   node VARCHAR
CREATE OR REPLACE VIEW attempt_positions AS
WITH ordered AS (
    SELECT
        doc_id,
        attempt_id,
        node,
        round,
        row_number() OVER (
            PARTITION BY doc_id
            ORDER BY started_at ASC NULLS LAST, att_idx ASC
        ) AS pos,
        coalesce(
            n,
            row_number() OVER (
                PARTITION BY doc_id, node
                ORDER BY started_at ASC NULLS LAST, att_idx ASC
            )
        ) AS n
    FROM attempts
)
SELECT doc_id, attempt_id, pos, n, round, node
FROM ordered
WHERE attempt_id IS NOT NULL
QUALIFY row_number() OVER (PARTITION BY doc_id, attempt_id ORDER BY pos) = 1;

-- ---- sql/views/latest_signals.sql ----
-- latest_signals: the latest verdict and the latest numeric score of every (run version, name) known at as_of (docs/figures.md "Per run: the acceptance table").
--
-- Purpose: as_of is the instant of knowledge, so a signal whose observed_at
--   is a known time after ocp_as_of() is set aside first (not yet observed;
--   one predicate on the signals read; a signal with no time is always
--   known). Then, within one document, for one kind ('verdict' or 'score')
--   and one name (exact, case-sensitive match), order the signals by
--   observed_at with an unknown time FIRST, then by position in run.signals;
--   the last one wins. Every verdict counts, whatever its value; only scores
--   whose value is a JSON number count (value_num IS NOT NULL), so a later
--   null, boolean or string score does not hide an earlier measured one.
--   One GROUP BY with arg_max over ocp_signal_order: a hash aggregate with a
--   small fixed-size state (no window over all signals). Each signal is
--   reduced before it: its verdict value to a state, its tier to a rank, its
--   at_attempt to the attempt's position (attempt_positions), so no string
--   is held per group. arg_max skips rows whose returned value is NULL, so
--   it returns a struct, never NULL, and the columns are read from it.
-- Parameters: getvariable('ocp_as_of') through ocp_as_of() (now when unset).
-- Output columns:
--   doc_id BIGINT, kind VARCHAR ('verdict' | 'score'), name VARCHAR
--   state TINYINT        verdicts: 0 fail, 1 unknown, 2 pass (ocp_verdict_state:
--                        a value other than accept/pass/reject/fail is unknown)
--   value DOUBLE         scores: the score
--   tier_rank TINYINT    0 verified … 3 asserted (ocp_tier_rank)
--   attempt_pos BIGINT   attempt_positions.pos of the attempt the signal
--                        names; NULL when it names no attempt of the run
--   sig_idx INTEGER      which signal won (its position in run.signals)
CREATE OR REPLACE VIEW latest_signals AS
WITH placed AS (
    SELECT
        s.doc_id,
        s.kind,
        s.name,
        CAST(
            CASE ocp_verdict_state(s.value_text) WHEN 'fail' THEN 0 WHEN 'pass' THEN 2 ELSE 1 END
            AS TINYINT
        ) AS state,
        s.value_num AS value,
        CAST(ocp_tier_rank(s.tier) AS TINYINT) AS tier_rank,
        ap.pos AS attempt_pos,
        s.sig_idx,
        s.observed_at
    FROM signals AS s
    LEFT JOIN attempt_positions AS ap ON ap.doc_id = s.doc_id AND ap.attempt_id = s.at_attempt
    WHERE
        (s.kind = 'verdict' OR (s.kind = 'score' AND s.value_num IS NOT NULL))
        AND (s.observed_at IS NULL OR s.observed_at <= ocp_as_of())
),
latest AS (
    SELECT
        doc_id,
        kind,
        name,
        arg_max(
            {
                'state': state,
                'value': value,
                'tier_rank': tier_rank,
                'attempt_pos': attempt_pos,
                'sig_idx': sig_idx
            },
            ocp_signal_order(observed_at, sig_idx)
        ) AS s
    FROM placed
    GROUP BY doc_id, kind, name
)
SELECT
    doc_id,
    kind,
    name,
    CASE WHEN kind = 'verdict' THEN s.state END AS state,
    CASE WHEN kind = 'score' THEN s.value END AS value,
    s.tier_rank,
    s.attempt_pos,
    s.sig_idx
FROM latest;

-- ---- sql/views/latest_verdicts.sql ----
-- latest_verdicts: the latest verdict of every (run version, name) known at as_of (docs/figures.md "Which signal counts", "outcome and reasons").
--
-- Purpose: the verdict rows of latest_signals: within one document, for one
--   verdict name, among the verdicts not observed after as_of, the one with
--   the latest observed_at (an unknown time sorts first), then the latest
--   position in run.signals, whatever its value.
-- Parameters: getvariable('ocp_as_of') through ocp_as_of() (now when unset).
-- Output columns:
--   doc_id BIGINT, name VARCHAR
--   state TINYINT        0 fail, 1 unknown, 2 pass (ocp_verdict_state)
--   tier_rank TINYINT    0 verified … 3 asserted (ocp_tier_rank)
--   attempt_pos BIGINT   position of the attempt it names (NULL: none of the run)
--   sig_idx INTEGER      which signal won (its position in run.signals)
CREATE OR REPLACE VIEW latest_verdicts AS
SELECT doc_id, name, state, tier_rank, attempt_pos, sig_idx
FROM latest_signals
WHERE kind = 'verdict';

-- ---- sql/views/latest_scores.sql ----
-- latest_scores: the latest numeric score of every (run version, name) known at as_of (docs/figures.md "Which signal counts").
--
-- Purpose: the score rows of latest_signals: only scores not observed after
--   as_of whose value is a JSON number count; among those, the latest
--   observed_at (an unknown time sorts first), then the latest position in
--   run.signals.
-- Parameters: getvariable('ocp_as_of') through ocp_as_of() (now when unset).
-- Output columns:
--   doc_id BIGINT, name VARCHAR
--   value DOUBLE         the score
--   tier_rank TINYINT    0 verified … 3 asserted (ocp_tier_rank)
--   attempt_pos BIGINT   position of the attempt it names (NULL: none of the run)
--   sig_idx INTEGER      which signal won (its position in run.signals)
CREATE OR REPLACE VIEW latest_scores AS
SELECT doc_id, name, value, tier_rank, attempt_pos, sig_idx
FROM latest_signals
WHERE kind = 'score';

-- ---- sql/views/run_features.sql ----
-- run_features: one row per run with every signal a rule can read (docs/figures.md "Per run: the acceptance table").
--
-- Purpose: the per-run feature step, done once whatever the number of
--   rules (the engine's feature table): the latest verdict and the latest
--   numeric score of every name, each with the attempt it names placed in
--   attempt order, and the run's excluded-event candidates. Rules are then
--   evaluated row by row on this table (run_rules, rule_parts, acceptance),
--   never against the signals again. The verdicts and scores of a run are
--   gathered from latest_signals (one row per run and name, signals known
--   at as_of only) into two maps. events holds the event signals not
--   observed after as_of (docs/figures.md "as_of": as_of is the instant of knowledge; those take
--   no part for any rule), the run's own and the late events matched to it
--   (matched_events, docs/late-events.md), sorted by sig_idx; which of them a rule counts
--   depends on its excludes_events and window (rule_parts).
-- Parameters: getvariable('ocp_as_of') through ocp_as_of().
--   Reads runs, latest_signals, signals, matched_events.
-- Output columns:
--   doc_id BIGINT, run_id VARCHAR, ended_at TIMESTAMPTZ
--   verdicts MAP(VARCHAR, STRUCT(state TINYINT, tier_rank TINYINT,
--     attempt_pos BIGINT))
--       name -> the latest verdict: state 0 fail, 1 unknown, 2 pass; its
--       tier; the position of the attempt it names (attempt_positions.pos;
--       NULL when it names no attempt of the run). NULL: no verdict.
--       (Three small fields: each field of a list costs memory per run.)
--   scores MAP(VARCHAR, STRUCT(value DOUBLE, tier_rank TINYINT,
--     attempt_pos BIGINT))
--       name -> the latest numeric score, the same way. NULL: no score.
--   events STRUCT(sig_idx BIGINT, name VARCHAR, observed_at TIMESTAMPTZ,
--     tier_rank TINYINT)[]  NULL when the run has none
CREATE OR REPLACE VIEW run_features AS
WITH signals_by_run AS (
    -- The lists of a run are window aggregates over the run's rows of
    -- latest_signals (one per name), then one row per run is kept: GROUP BY
    -- doc_id with list() peaked higher, as DuckDB holds per-group list
    -- states to the end of the query, where the window keeps its input rows
    -- compactly (benchmarks/RESULTS.md, "Measured and not kept").
    SELECT
        doc_id,
        map_from_entries(
            list({
                'key': name,
                'value': {'state': state, 'tier_rank': tier_rank, 'attempt_pos': attempt_pos}
            }) FILTER (WHERE kind = 'verdict') OVER per_run
        ) AS verdicts,
        map_from_entries(
            list({
                'key': name,
                'value': {'value': value, 'tier_rank': tier_rank, 'attempt_pos': attempt_pos}
            }) FILTER (WHERE kind = 'score') OVER per_run
        ) AS scores
    FROM latest_signals
    WHERE name IS NOT NULL
    WINDOW per_run AS (PARTITION BY doc_id)
    QUALIFY row_number() OVER per_run = 1
),
event_signals AS (
    -- the run's own event signals, then the late events matched to it
    -- (docs/late-events.md: as if appended to run.signals, sig_idx >= 2^32)
    SELECT doc_id, CAST(sig_idx AS BIGINT) AS sig_idx, name, observed_at, tier
    FROM signals
    WHERE kind = 'event'
    UNION ALL
    SELECT doc_id, sig_idx, name, observed_at, tier
    FROM matched_events
),
events AS (
    SELECT
        doc_id,
        list_sort(
            list({
                'sig_idx': sig_idx,
                'name': name,
                'observed_at': observed_at,
                'tier_rank': CAST(ocp_tier_rank(tier) AS TINYINT)
            })
        ) AS events
    FROM event_signals
    WHERE name IS NOT NULL AND (observed_at IS NULL OR observed_at <= ocp_as_of())
    GROUP BY doc_id
)
-- runs on the right: the join builds its hash table on the narrow runs
-- rows and streams the feature rows through it (every run is kept)
SELECT r.doc_id, r.run_id, r.ended_at, s.verdicts, s.scores, e.events
FROM signals_by_run AS s
RIGHT JOIN runs AS r ON r.doc_id = s.doc_id
LEFT JOIN events AS e ON e.doc_id = r.doc_id;

-- ---- sql/views/run_rules.sql ----
-- run_rules: every (run, rule) pair to evaluate, with the rule's effective fields.
--
-- Purpose: one row per run under its own recorded rule (rule = 'recorded'),
--   plus one row per run and row of alternative_rules. run_features (one
--   row per run, carrying the run's recorded rule) is joined to a table of
--   K + 1 rules: a 'recorded' row meaning "the run's own rule", then every
--   alternative rule. DuckDB builds that small side and streams the runs
--   through it (see rules_to_join), so no runs × rules table is ever held,
--   and the features are read once.
--   The defaults of docs/figures.md "The rule" are applied once per rule (per run for
--   recorded rules): excludes_events NULL reads ['revert', 'incident'],
--   window_days NULL reads 14, requires keeps each name once, at its first
--   place (NULL names dropped). A run without a recorded rule gets problem
--   'no_rule', an unreadable one (rules.valid = false) 'invalid_rule'; such
--   a row has no parts and counts no event.
-- Parameters: none (reads run_features, rules, alternative_rules).
-- Output columns:
--   doc_id BIGINT, run_id VARCHAR, ended_at TIMESTAMPTZ
--   rule VARCHAR              'recorded' or the alternative rule's name
--   problem VARCHAR           NULL | 'no_rule' | 'invalid_rule'
--   requires VARCHAR[]        distinct names in rule order ([] when none)
--   score_name VARCHAR, score_target DOUBLE, score_better VARCHAR
--   excludes_events VARCHAR[] effective (default applied; [] with a problem)
--   window_days BIGINT        effective (default applied)
--   verdicts, scores, events  the run's features (run_features)
CREATE OR REPLACE VIEW run_rules AS
WITH own AS (
    SELECT
        f.*,
        CASE
            WHEN rl.doc_id IS NULL THEN 'no_rule'
            WHEN NOT rl.valid THEN 'invalid_rule'
        END AS problem,
        rl.requires,
        rl.score_name,
        rl.score_target,
        rl.score_better,
        rl.excludes_events,
        rl.window_days
    FROM run_features AS f
    LEFT JOIN rules AS rl ON rl.doc_id = f.doc_id
),
effective AS (
    -- the defaults, applied to a rule's fields (per run for recorded rules)
    SELECT
        * EXCLUDE (requires, score_name, score_target, score_better, excludes_events, window_days),
        CASE
            WHEN problem IS NULL THEN list_filter(
                coalesce(requires, []),
                lambda name, i: name IS NOT NULL AND list_position(requires, name) = i
            )
            ELSE []
        END AS requires,
        CASE WHEN problem IS NULL THEN score_name END AS score_name,
        CASE WHEN problem IS NULL THEN score_target END AS score_target,
        CASE WHEN problem IS NULL THEN score_better END AS score_better,
        CASE
            WHEN problem IS NULL THEN coalesce(excludes_events, ['revert', 'incident'])
            ELSE []
        END AS excludes_events,
        CASE WHEN problem IS NULL THEN coalesce(window_days, 14) END AS window_days
    FROM own
),
rule_table AS (
    -- K + 1 rows: the run's own rule, then every alternative rule
    SELECT
        'recorded' AS rule,
        true AS own_rule,
        CAST(NULL AS VARCHAR[]) AS requires,
        CAST(NULL AS VARCHAR) AS score_name,
        CAST(NULL AS DOUBLE) AS score_target,
        CAST(NULL AS VARCHAR) AS score_better,
        CAST(NULL AS VARCHAR[]) AS excludes_events,
        CAST(NULL AS BIGINT) AS window_days
    UNION ALL
    SELECT
        name AS rule,
        false AS own_rule,
        list_filter(
            coalesce(requires, []),
            lambda name, i: name IS NOT NULL AND list_position(requires, name) = i
        ) AS requires,
        score_name,
        score_target,
        score_better,
        coalesce(excludes_events, ['revert', 'incident']) AS excludes_events,
        coalesce(window_days, 14) AS window_days
    FROM alternative_rules
),
rules_to_join AS (
    -- The rule table joined to one row of the runs files: the same rows
    -- (none when there is no run at all), but DuckDB then estimates their
    -- number from those files, as it estimates the runs. It builds its join
    -- on the side estimated smaller; without this, a dataset whose first
    -- listed file is an empty schema file (estimated 0 rows) made it hold
    -- every run's features and stream the K + 1 rules through them on one
    -- thread, instead of streaming the runs on every thread.
    SELECT t.*
    FROM rule_table AS t, (SELECT 1 FROM ocp_all_versions('runs') LIMIT 1)
)
SELECT
    e.doc_id,
    e.run_id,
    e.ended_at,
    t.rule,
    CASE WHEN t.own_rule THEN e.problem END AS problem,
    CASE WHEN t.own_rule THEN e.requires ELSE t.requires END AS requires,
    CASE WHEN t.own_rule THEN e.score_name ELSE t.score_name END AS score_name,
    CASE WHEN t.own_rule THEN e.score_target ELSE t.score_target END AS score_target,
    CASE WHEN t.own_rule THEN e.score_better ELSE t.score_better END AS score_better,
    CASE WHEN t.own_rule THEN e.excludes_events ELSE t.excludes_events END AS excludes_events,
    CASE WHEN t.own_rule THEN e.window_days ELSE t.window_days END AS window_days,
    e.verdicts,
    e.scores,
    e.events
FROM effective AS e
CROSS JOIN rules_to_join AS t;

-- ---- sql/views/rule_parts.sql ----
-- rule_parts: what each part of a (run, rule) pair says, and the events it counts (docs/figures.md "outcome and reasons").
--
-- Purpose: one row per (run, rule), computed from that row alone (a
--   projection of run_rules, so DuckDB streams it):
--   parts lists one part per required verdict name (in rule order), then
--   the score part when the rule has one. A verdict part is the latest
--   verdict of its name (run_features.verdicts): state 2 pass, 0 fail, 1
--   unknown (no verdict, or another word). The score part takes the latest
--   numeric score of score_name: none is 1 (unknown); otherwise 2 (pass)
--   when value <= target (better 'lower') or value >= target (otherwise),
--   equal reaching the target, NaN never; else 0 (fail).
--   late_events lists the excluded events the rule counts: an event signal
--   (already not after as_of, run_features) whose name is in the rule's
--   excludes_events (exact match; its value is ignored) counts when the run
--   has no ended_at, or the event has no time, or observed_at - ended_at <=
--   window_days days (no lower bound: an event before the run ended counts).
--   Differences are taken in whole microseconds (epoch_us), never as
--   INTERVALs, whose comparison equates 1 month with 30 days.
-- Parameters: none (reads run_rules).
-- Output columns:
--   doc_id BIGINT, run_id VARCHAR, ended_at TIMESTAMPTZ, rule VARCHAR,
--   problem VARCHAR, requires VARCHAR[], score_name VARCHAR,
--   excludes_events VARCHAR[], window_days BIGINT   as in run_rules
--   part_names VARCHAR[]   requires, then score_name when the rule has a score
--   parts STRUCT(state TINYINT, tier_rank TINYINT, attempt_pos BIGINT)[]
--                          one per part_names entry: state 0 fail, 1
--                          unknown, 2 pass; the tier of the signal used
--                          (NULL when none) and the position of the
--                          attempt it names (NULL when it names no
--                          attempt of the run)
--   late_events STRUCT(sig_idx BIGINT, name VARCHAR, observed_at
--     TIMESTAMPTZ, tier_rank TINYINT)[]  counted events, in run.signals order
CREATE OR REPLACE VIEW rule_parts AS
WITH scored AS (
    SELECT
        *,
        scores[score_name] AS score_signal
    FROM run_rules
)
SELECT
    doc_id,
    run_id,
    ended_at,
    rule,
    problem,
    requires,
    score_name,
    excludes_events,
    window_days,
    CASE WHEN score_name IS NULL THEN requires ELSE list_append(requires, score_name) END
        AS part_names,
    list_concat(
        list_transform(
            requires,
            lambda name: coalesce(
                verdicts[name],
                {
                    'state': CAST(1 AS TINYINT),
                    'tier_rank': CAST(NULL AS TINYINT),
                    'attempt_pos': CAST(NULL AS BIGINT)
                }
            )
        ),
        CASE WHEN score_name IS NOT NULL THEN [{
            'state': CAST(
                CASE
                    WHEN score_signal.value IS NULL THEN 1
                    WHEN NOT isnan(score_signal.value)
                        AND CASE
                            WHEN score_better = 'lower' THEN score_signal.value <= score_target
                            ELSE score_signal.value >= score_target
                        END
                        THEN 2
                    ELSE 0
                END AS TINYINT
            ),
            'tier_rank': score_signal.tier_rank,
            'attempt_pos': score_signal.attempt_pos
        }] ELSE [] END
    ) AS parts,
    coalesce(
        list_filter(
            events,
            lambda e: list_contains(excludes_events, e.name)
            AND (
                ended_at IS NULL
                OR e.observed_at IS NULL
                OR CAST(epoch_us(e.observed_at) AS HUGEINT) - epoch_us(ended_at)
                <= CAST(window_days AS HUGEINT) * 86400000000
            )
        ),
        []
    ) AS late_events
FROM scored;

-- ---- sql/views/acceptance.sql ----
-- acceptance: the outcome of every run under its recorded rule and every alternative rule.
--
-- Purpose: the SQL twin of ocp_analytics.engine.acceptance (docs/figures.md "Per run: the acceptance table"); the
--   two are held equal, field by field, by tests/property/test_sql_differential.py.
--   Combining: no parts (empty requires, no score) gives unknown; any part
--   failing gives rejected; all parts passing gives accepted; otherwise
--   unknown. Then any counted excluded event gives rejected. A run with no
--   recorded rule is unknown ['no_rule'], an unreadable one unknown
--   ['invalid_rule'] (tier asserted, q 0.70, window closed).
--   reasons: requires in rule order, then the score, then one late:NAME per
--   counted event in run.signals order.
--   tier: the weakest tier used (verdicts that passed or failed, the score
--   used, counted events); asserted when nothing was used.
--   accepted_*: only for accepted outcomes, from the deciding signal (latest
--   verdict of each required name, score used) whose attempt comes last in
--   attempt order; NULL when none names an attempt of the run.
--   window_open: the rule is read, the run has an ended_at, the rule
--   excludes at least one event name, and as_of < ended_at + window_days.
--   Every column comes from the (run, rule) row of rule_parts alone (a
--   projection: DuckDB streams it, and a query that does not read reasons,
--   such as rates, never builds them). The outcome is the smallest part
--   state (0 fail, 1 unknown, 2 pass) when the rule has parts.
-- Parameters: getvariable('ocp_as_of') through ocp_as_of() (now when unset);
--   the rows of alternative_rules.
-- Output columns (the names and types of the Python engine):
--   run_id VARCHAR, rule VARCHAR ('recorded' or an alternative rule's name)
--   outcome VARCHAR                 'accepted' | 'rejected' | 'unknown'
--   reasons VARCHAR[]               e.g. ['failed:tests', 'late:revert']
--   tier VARCHAR                    verified | reported | heuristic | asserted
--   q DOUBLE                        0.98 | 0.95 | 0.80 | 0.70
--   accepted_attempt VARCHAR        the attempt id at acceptance
--   attempts_to_acceptance BIGINT   its 1-based position in attempt order
--   accepted_attempt_n BIGINT       its n, or position within its node
--   accepted_round BIGINT           its round
--   window_open BOOLEAN             a late event can still turn the outcome
--   as_of TIMESTAMPTZ               the instant of knowledge: signals and
--                                   events observed after it took no part
CREATE OR REPLACE VIEW acceptance AS
WITH judged AS (
    SELECT
        *,
        CASE
            WHEN problem IS NOT NULL THEN 'unknown'
            WHEN len(late_events) > 0 THEN 'rejected'
            WHEN len(parts) = 0 THEN 'unknown'
            WHEN list_min(list_transform(parts, lambda p: p.state)) = 0 THEN 'rejected'
            WHEN list_min(list_transform(parts, lambda p: p.state)) = 2 THEN 'accepted'
            ELSE 'unknown'
        END AS outcome,
        CASE WHEN problem IS NULL THEN greatest(
            -- parts whose signal was used (passed or failed), counted events
            list_max(list_transform(parts, lambda p: CASE WHEN p.state <> 1 THEN p.tier_rank END)),
            list_max(list_transform(late_events, lambda e: e.tier_rank))
        ) END AS tier_rank,
        ocp_as_of() AS as_of
    FROM rule_parts
),
decided AS (
    SELECT
        *,
        -- the deciding signal whose attempt comes last in attempt order
        CASE WHEN outcome = 'accepted' THEN
            list_max(list_transform(parts, lambda p: p.attempt_pos))
        END AS attempt_pos
    FROM judged
)
SELECT
    d.run_id,
    d.rule,
    d.outcome,
    CAST(
        CASE
            WHEN problem IS NOT NULL THEN [problem]
            ELSE list_concat(
                list_filter(
                    list_transform(
                        parts,
                        lambda p, i: CASE p.state
                            WHEN 2 THEN NULL
                            WHEN 0 THEN CASE
                                WHEN i > len(requires) THEN 'below_target:'
                                ELSE 'failed:'
                            END || part_names[i]
                            ELSE 'missing:' || part_names[i]
                        END
                    ),
                    lambda reason: reason IS NOT NULL
                ),
                list_transform(late_events, lambda e: 'late:' || e.name)
            )
        END AS VARCHAR[]
    ) AS reasons,
    ocp_tier_word(tier_rank) AS tier,
    ocp_tier_q(tier_rank) AS q,
    ap.attempt_id AS accepted_attempt,
    CAST(d.attempt_pos AS BIGINT) AS attempts_to_acceptance,
    CAST(ap.n AS BIGINT) AS accepted_attempt_n,
    CAST(ap.round AS BIGINT) AS accepted_round,
    coalesce(
        problem IS NULL
        AND ended_at IS NOT NULL
        AND len(excludes_events) > 0
        AND CAST(epoch_us(as_of) AS HUGEINT)
        < epoch_us(ended_at) + CAST(window_days AS HUGEINT) * 86400000000,
        false
    ) AS window_open,
    CAST(as_of AS TIMESTAMPTZ) AS as_of
FROM decided AS d
LEFT JOIN attempt_positions AS ap ON ap.doc_id = d.doc_id AND ap.pos = d.attempt_pos;

-- ---- sql/views/rates.sql ----
-- rates: acceptance rates per rule over all runs (docs/figures.md "Per group: rates").
--
-- Purpose: the SQL twin of ocp_analytics.rates(dataset, rules) with no
--   grouping (rates_from with by = ()). For grouped rates see
--   sql/queries/rates_by.sql, rates_by_label.sql and rates_by_period.sql.
--   The counts are ocp_rate_counts and the figures ocp_rate_figures, shared
--   with the grouped queries.
-- Parameters: those of acceptance (ocp_as_of, alternative_rules).
-- Output columns, one row per rule, ordered by rule:
--   rule VARCHAR
--   runs, accepted, rejected, unknown BIGINT
--   accept_rate DOUBLE          accepted / (accepted + rejected), NULL when none decided
--   ci_low, ci_high DOUBLE      95 % Wilson interval on accept_rate (ocp_wilson)
--   decided_share DOUBLE        (accepted + rejected) / runs
--   attempts_mean DOUBLE        mean attempts_to_acceptance of accepted runs
--   attempts_median DOUBLE      its median (quantile_cont 0.5: the mean of
--                               the two middle values, as polars' median)
--   first_attempt_share DOUBLE  share of accepted runs with attempts_to_acceptance = 1
--                               among those with a known value; NULL when none
--   first_node_attempt_share DOUBLE  share of those accepted at their node's first
--                               attempt (accepted_attempt_n = 1)
--   provisional BIGINT          accepted runs whose window is still open
--   tier_verified, tier_reported, tier_heuristic, tier_asserted BIGINT
--                               decided runs (accepted or rejected) by evidence tier
--   as_of TIMESTAMPTZ
CREATE OR REPLACE VIEW rates AS
WITH grouped AS (
    SELECT
        rule,
        ocp_rate_counts(
            outcome, attempts_to_acceptance, accepted_attempt_n, tier, window_open, as_of
        ) AS counts
    FROM acceptance
    GROUP BY rule
)
SELECT rule, unnest(ocp_rate_figures(counts))
FROM grouped
ORDER BY rule NULLS LAST;

-- ---- sql/macros/ocp_label_column.sql ----
-- ocp_label_column(key): the quoted SQL name of a label's group column, "label.KEY".
--
-- Purpose: every table of the package names a label's group column as
--   `--by` spells it (label.team), in polars, the CLI, data files and
--   here. The key comes from data, so it is quoted: a double quote in it
--   is doubled, and NULL stops the query with a hint.
-- Parameters:
--   key  VARCHAR, the label key.
-- Output: VARCHAR, a quoted identifier.
-- Example: SELECT ocp_label_column('team');  -- '"label.team"'
CREATE OR REPLACE MACRO ocp_label_column(key) AS
CASE
    WHEN key IS NULL THEN error('ocp_label is not set. Hint: SET VARIABLE ocp_label = ''team'';')
    ELSE '"label.' || replace(CAST(key AS VARCHAR), '"', '""') || '"'
END;

-- ---- sql/macros/ocp_rates_by_label.sql ----
-- ocp_rates_by_label(wanted_key, wanted_tier): acceptance rates per value of one run label and rule.
--
-- Purpose: the work of queries/rates_by_label.sql, which names the group
--   column label.KEY as polars does; call this macro directly for the
--   value column under a fixed name (label_value).
-- Parameters:
--   wanted_key   VARCHAR, the label key (required), e.g. 'team'.
--   wanted_tier  VARCHAR or NULL: count outcomes below this tier as unknown.
-- Output: label_value VARCHAR (the run's value of that label, NULL when it
--   has none), then the columns of the rates view, ordered by label_value
--   then rule (NULLs last).
-- Example: SELECT * FROM ocp_rates_by_label('team', NULL);
CREATE OR REPLACE MACRO ocp_rates_by_label(wanted_key, wanted_tier) AS TABLE
WITH checked AS (
    -- stops the query with a clear message when a parameter is wrong
    SELECT
        CASE
            WHEN label_key IS NULL THEN error(
                'the label key is NULL. Hint: SET VARIABLE ocp_label = ''team'';'
            )
            -- a word that is no tier reads as another tier's word
            WHEN ocp_tier_word(ocp_tier_rank(min_tier)) <> min_tier THEN error(
                'ocp_min_tier is ''' || min_tier || '''. '
                || 'Hint: use verified, reported, heuristic or asserted.'
            )
            ELSE true
        END AS ok,
        label_key,
        min_tier
    FROM (
        SELECT
            CAST(wanted_key AS VARCHAR) AS label_key,
            CAST(wanted_tier AS VARCHAR) AS min_tier
    )
),
judged AS (
    SELECT
        checked.label_key,
        map_extract_value(runs.labels, checked.label_key) AS label_value,
        acceptance.rule,
        CASE
            WHEN checked.min_tier IS NULL
                OR ocp_tier_rank(acceptance.tier) <= ocp_tier_rank(checked.min_tier)
                THEN acceptance.outcome
            ELSE 'unknown'
        END AS outcome,
        acceptance.attempts_to_acceptance,
        acceptance.accepted_attempt_n,
        acceptance.tier,
        acceptance.window_open,
        acceptance.as_of
    FROM acceptance
    INNER JOIN runs ON runs.run_id = acceptance.run_id
    CROSS JOIN checked
    WHERE checked.ok
),
grouped AS (
    SELECT
        label_key,
        label_value,
        rule,
        ocp_rate_counts(
            outcome, attempts_to_acceptance, accepted_attempt_n, tier, window_open, as_of
        ) AS counts
    FROM judged
    GROUP BY label_key, label_value, rule
)
SELECT label_value, rule, unnest(ocp_rate_figures(counts))
FROM grouped
ORDER BY label_value NULLS LAST, rule NULLS LAST;
