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
