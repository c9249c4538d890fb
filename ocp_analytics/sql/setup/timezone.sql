-- timezone: pin the session time zone to UTC.
--
-- Purpose: naive timestamps, now() and TIMESTAMPTZ arithmetic must not depend
--   on the machine the query runs on (docs/figures.md "Times"; pitfalls note, DuckDB 2).
-- Parameters: none.
-- Output: none (a session setting).
SET TimeZone = 'UTC';
