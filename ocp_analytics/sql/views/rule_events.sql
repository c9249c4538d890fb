-- rule_events: the excluded events each (run, rule) pair counts (SEMANTICS §6).
--
-- Purpose: a signal with kind 'event' whose name is in the rule's effective
--   excludes_events (exact match; its value is ignored) counts when it is
--   not observed after as_of, and the run has no ended_at, or the event has
--   no time, or observed_at - ended_at <= window_days days (no lower bound:
--   an event before the run ended counts). Differences are taken in whole
--   microseconds (epoch_us), never as INTERVALs, whose comparison equates
--   1 month with 30 days.
-- Parameters: getvariable('ocp_as_of') through ocp_as_of().
-- Output columns:
--   doc_id BIGINT, rule VARCHAR
--   sig_idx INTEGER       position of the event in run.signals
--   name VARCHAR          the event name (reason late:NAME)
--   tier_rank INTEGER     tier rank of the event
--   observed_at TIMESTAMPTZ
CREATE OR REPLACE VIEW rule_events AS
SELECT
    rr.doc_id,
    rr.rule,
    s.sig_idx,
    s.name,
    ocp_tier_rank(s.tier) AS tier_rank,
    s.observed_at
FROM run_rules AS rr
INNER JOIN signals AS s ON s.doc_id = rr.doc_id
WHERE
    rr.problem IS NULL
    AND s.kind = 'event'
    AND list_contains(rr.excludes_events, s.name)
    AND (s.observed_at IS NULL OR s.observed_at <= ocp_as_of())
    AND (
        rr.ended_at IS NULL
        OR s.observed_at IS NULL
        OR CAST(epoch_us(s.observed_at) AS HUGEINT) - epoch_us(rr.ended_at)
        <= CAST(rr.window_days AS HUGEINT) * 86400000000
    );
