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
