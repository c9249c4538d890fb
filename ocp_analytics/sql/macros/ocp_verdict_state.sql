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
