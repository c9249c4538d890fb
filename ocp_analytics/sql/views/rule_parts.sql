-- rule_parts: what each part of a (run, rule) pair says, and the events it counts (docs/figures.md "outcome and reasons").
--
-- Purpose: one row per (run, rule), computed from that row alone (a
--   projection of run_rules, so DuckDB streams it):
--   parts lists one part per required verdict name (in rule order), then
--   the score part when the rule has one. A verdict part is the latest
--   verdict of its name (run_features.verdicts): state 2 pass, 0 fail, 1
--   unknown (no verdict, or another word). The score part takes the latest
--   numeric score of score_name: none is 1 (unknown); otherwise 2 (pass)
--   when value <= target (better 'lower') or value >= target (otherwise),
--   equal reaching the target, NaN never; else 0 (fail).
--   late_events lists the excluded events the rule counts: an event signal
--   (already not after as_of, run_features) whose name is in the rule's
--   excludes_events (exact match; its value is ignored) counts when the run
--   has no ended_at, or the event has no time, or observed_at - ended_at <=
--   window_days days (no lower bound: an event before the run ended counts).
--   Differences are taken in whole microseconds (epoch_us), never as
--   INTERVALs, whose comparison equates 1 month with 30 days.
-- Parameters: none (reads run_rules).
-- Output columns:
--   doc_id BIGINT, run_id VARCHAR, ended_at TIMESTAMPTZ, rule VARCHAR,
--   problem VARCHAR, requires VARCHAR[], score_name VARCHAR,
--   excludes_events VARCHAR[], window_days BIGINT   as in run_rules
--   part_names VARCHAR[]   requires, then score_name when the rule has a score
--   parts STRUCT(state TINYINT, tier_rank TINYINT, attempt_pos BIGINT)[]
--                          one per part_names entry: state 0 fail, 1
--                          unknown, 2 pass; the tier of the signal used
--                          (NULL when none) and the position of the
--                          attempt it names (NULL when it names no
--                          attempt of the run)
--   late_events STRUCT(sig_idx BIGINT, name VARCHAR, observed_at
--     TIMESTAMPTZ, tier_rank TINYINT)[]  counted events, in run.signals order
CREATE OR REPLACE VIEW rule_parts AS
WITH scored AS (
    SELECT
        *,
        scores[score_name] AS score_signal
    FROM run_rules
)
SELECT
    doc_id,
    run_id,
    ended_at,
    rule,
    problem,
    requires,
    score_name,
    excludes_events,
    window_days,
    CASE WHEN score_name IS NULL THEN requires ELSE list_append(requires, score_name) END
        AS part_names,
    list_concat(
        list_transform(
            requires,
            lambda name: coalesce(
                verdicts[name],
                {
                    'state': CAST(1 AS TINYINT),
                    'tier_rank': CAST(NULL AS TINYINT),
                    'attempt_pos': CAST(NULL AS BIGINT)
                }
            )
        ),
        CASE WHEN score_name IS NOT NULL THEN [{
            'state': CAST(
                CASE
                    WHEN score_signal.value IS NULL THEN 1
                    WHEN NOT isnan(score_signal.value)
                        AND CASE
                            WHEN score_better = 'lower' THEN score_signal.value <= score_target
                            ELSE score_signal.value >= score_target
                        END
                        THEN 2
                    ELSE 0
                END AS TINYINT
            ),
            'tier_rank': score_signal.tier_rank,
            'attempt_pos': score_signal.attempt_pos
        }] ELSE [] END
    ) AS parts,
    coalesce(
        list_filter(
            events,
            lambda e: list_contains(excludes_events, e.name)
            AND (
                ended_at IS NULL
                OR e.observed_at IS NULL
                OR CAST(epoch_us(e.observed_at) AS HUGEINT) - epoch_us(ended_at)
                <= CAST(window_days AS HUGEINT) * 86400000000
            )
        ),
        []
    ) AS late_events
FROM scored;
