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
