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
