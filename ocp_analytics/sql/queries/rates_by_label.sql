-- rates_by_label: acceptance rates per value of one run label and rule (docs/figures.md "Per group: rates").
--
-- Purpose: the SQL twin of ocp_analytics.rates(dataset, rules,
--   by='label.KEY', min_tier=...): runs are grouped by the value of the
--   label KEY (runs.labels), NULL when a run has no such label. The group
--   column is named label.KEY, as in polars, the CLI and the report's data
--   files; query() is what lets a column take its name from a variable
--   (the key is quoted by ocp_label_column).
-- Parameters:
--   getvariable('ocp_label')     VARCHAR, the label key (required), e.g. 'team'.
--   getvariable('ocp_min_tier')  VARCHAR, optional, as in rates_by.sql.
--   those of acceptance (ocp_as_of, alternative_rules).
-- Output columns, ordered by the label's value then rule (NULLs last):
--   "label.KEY" VARCHAR  the run's value of that label (e.g. "label.team")
--   those of the rates view (rule, runs, accepted, …, as_of)
SELECT *
FROM query(
    'SELECT label_value AS ' || ocp_label_column(getvariable('ocp_label'))
    || ', * EXCLUDE (label_value) '
    || 'FROM ocp_rates_by_label(getvariable(''ocp_label''), getvariable(''ocp_min_tier''))'
);
