-- rule_parts: the parts of every (run, rule) pair and what each says (SEMANTICS §5).
--
-- Purpose: one row per required verdict name (duplicates counted once, at
--   their first place) and one row for the score part when the rule has one.
--   A verdict part takes the latest verdict of its name: 'pass', 'fail'
--   (reason failed:NAME) or NULL (no verdict or another word; reason
--   missing:NAME). The score part takes the latest numeric score of
--   score_name: none is NULL (missing:NAME); otherwise 'pass' when value <=
--   target (better 'lower') or value >= target (otherwise), equal reaching
--   the target, NaN never; else 'fail' (below_target:NAME, for either
--   direction). attempt_pos is the position (attempt_positions.pos) of the
--   attempt the deciding signal names, NULL when it names no attempt of the run.
-- Parameters: none (reads run_rules, latest_verdicts, latest_scores,
--   attempt_positions).
-- Output columns:
--   doc_id BIGINT, rule VARCHAR
--   part_idx BIGINT      order of the part: requires in rule order, then the score
--   part_kind VARCHAR    'verdict' | 'score'
--   name VARCHAR         the verdict or score name
--   state VARCHAR        'pass' | 'fail' | NULL (unknown)
--   reason VARCHAR       NULL when the part passes
--   tier_rank INTEGER    tier rank of the signal used (NULL when none)
--   at_attempt VARCHAR   the attempt the signal names, as written
--   attempt_pos BIGINT   its position among the run's attempts, or NULL
CREATE OR REPLACE VIEW rule_parts AS
WITH required AS (
    SELECT doc_id, rule, name, min(i) AS part_idx
    FROM (
        SELECT
            doc_id,
            rule,
            unnest(requires) AS name,
            generate_subscripts(requires, 1) AS i
        FROM run_rules
        WHERE problem IS NULL
    )
    WHERE name IS NOT NULL
    GROUP BY doc_id, rule, name
),
verdict_parts AS (
    SELECT
        q.doc_id,
        q.rule,
        CAST(q.part_idx AS BIGINT) AS part_idx,
        'verdict' AS part_kind,
        q.name,
        v.state,
        CASE
            WHEN v.state = 'pass' THEN NULL
            WHEN v.state = 'fail' THEN 'failed:' || q.name
            ELSE 'missing:' || q.name
        END AS reason,
        v.tier_rank,
        v.at_attempt
    FROM required AS q
    LEFT JOIN latest_verdicts AS v ON v.doc_id = q.doc_id AND v.name = q.name
),
score_parts AS (
    SELECT
        rr.doc_id,
        rr.rule,
        CAST(2147483647 AS BIGINT) AS part_idx,
        'score' AS part_kind,
        rr.score_name AS name,
        CASE
            WHEN s.value IS NULL THEN NULL
            WHEN NOT isnan(s.value)
                AND CASE
                    WHEN rr.score_better = 'lower' THEN s.value <= rr.score_target
                    ELSE s.value >= rr.score_target
                END
                THEN 'pass'
            ELSE 'fail'
        END AS state,
        s.tier_rank,
        s.at_attempt
    FROM run_rules AS rr
    LEFT JOIN latest_scores AS s ON s.doc_id = rr.doc_id AND s.name = rr.score_name
    WHERE rr.problem IS NULL AND rr.score_name IS NOT NULL
),
parts AS (
    SELECT doc_id, rule, part_idx, part_kind, name, state, reason, tier_rank, at_attempt
    FROM verdict_parts
    UNION ALL
    SELECT
        doc_id,
        rule,
        part_idx,
        part_kind,
        name,
        state,
        CASE
            WHEN state = 'pass' THEN NULL
            WHEN state = 'fail' THEN 'below_target:' || name
            ELSE 'missing:' || name
        END AS reason,
        tier_rank,
        at_attempt
    FROM score_parts
)
SELECT
    p.doc_id,
    p.rule,
    p.part_idx,
    p.part_kind,
    p.name,
    p.state,
    p.reason,
    p.tier_rank,
    p.at_attempt,
    ap.pos AS attempt_pos
FROM parts AS p
LEFT JOIN attempt_positions AS ap ON ap.doc_id = p.doc_id AND ap.attempt_id = p.at_attempt;
