-- acceptance: the outcome of every run under its recorded rule and every alternative rule.
--
-- Purpose: the SQL twin of ocp_analytics.acceptance (SEMANTICS §6–§9); the
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
--   as_of TIMESTAMPTZ               the instant events were judged at
CREATE OR REPLACE VIEW acceptance AS
WITH part_summary AS (
    SELECT
        doc_id,
        rule,
        count(*) AS n_parts,
        bool_or(coalesce(state = 'fail', false)) AS any_fail,
        bool_and(coalesce(state = 'pass', false)) AS all_pass,
        list(reason ORDER BY part_idx) FILTER (WHERE reason IS NOT NULL) AS part_reasons,
        max(tier_rank) FILTER (WHERE state IS NOT NULL) AS used_rank,
        max(attempt_pos) AS last_pos
    FROM rule_parts
    GROUP BY doc_id, rule
),
event_summary AS (
    SELECT
        doc_id,
        rule,
        list('late:' || name ORDER BY sig_idx) AS event_reasons,
        max(tier_rank) AS event_rank
    FROM rule_events
    GROUP BY doc_id, rule
),
judged AS (
    SELECT
        rr.doc_id,
        rr.run_id,
        rr.rule,
        rr.problem,
        rr.ended_at,
        rr.excludes_events,
        rr.window_days,
        p.part_reasons,
        p.last_pos,
        e.event_reasons,
        CASE
            WHEN rr.problem IS NOT NULL THEN 'unknown'
            WHEN e.event_reasons IS NOT NULL THEN 'rejected'
            WHEN coalesce(p.n_parts, 0) = 0 THEN 'unknown'
            WHEN p.any_fail THEN 'rejected'
            WHEN p.all_pass THEN 'accepted'
            ELSE 'unknown'
        END AS outcome,
        CASE WHEN rr.problem IS NULL THEN greatest(p.used_rank, e.event_rank) END AS tier_rank,
        ocp_as_of() AS as_of
    FROM run_rules AS rr
    LEFT JOIN part_summary AS p ON p.doc_id = rr.doc_id AND p.rule = rr.rule
    LEFT JOIN event_summary AS e ON e.doc_id = rr.doc_id AND e.rule = rr.rule
)
SELECT
    j.run_id,
    j.rule,
    j.outcome,
    CAST(
        CASE
            WHEN j.problem IS NOT NULL THEN [j.problem]
            ELSE list_concat(coalesce(j.part_reasons, []), coalesce(j.event_reasons, []))
        END AS VARCHAR[]
    ) AS reasons,
    ocp_tier_word(j.tier_rank) AS tier,
    ocp_tier_q(j.tier_rank) AS q,
    CASE WHEN j.outcome = 'accepted' THEN ap.attempt_id END AS accepted_attempt,
    CAST(CASE WHEN j.outcome = 'accepted' THEN ap.pos END AS BIGINT) AS attempts_to_acceptance,
    CAST(CASE WHEN j.outcome = 'accepted' THEN ap.n END AS BIGINT) AS accepted_attempt_n,
    CAST(CASE WHEN j.outcome = 'accepted' THEN ap.round END AS BIGINT) AS accepted_round,
    coalesce(
        j.problem IS NULL
        AND j.ended_at IS NOT NULL
        AND len(j.excludes_events) > 0
        AND CAST(epoch_us(j.as_of) AS HUGEINT)
        < epoch_us(j.ended_at) + CAST(j.window_days AS HUGEINT) * 86400000000,
        false
    ) AS window_open,
    CAST(j.as_of AS TIMESTAMPTZ) AS as_of
FROM judged AS j
LEFT JOIN attempt_positions AS ap ON ap.doc_id = j.doc_id AND ap.pos = j.last_pos;
