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
