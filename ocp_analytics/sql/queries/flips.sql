-- flips: for every ordered pair of rules, the runs accepted under one and not the other.
--
-- Purpose: the SQL twin of ocp_analytics.engine.rates.flips_from: compare teams'
--   bars run by run. A flip is a run accepted under rule_a and not accepted
--   (rejected or unknown) under rule_b. Rules are 'recorded' and the rows of
--   alternative_rules.
-- Parameters:
--   getvariable('ocp_sample')  BIGINT, how many run ids to show per pair
--                              (default 5).
--   those of acceptance (ocp_as_of).
-- Output columns, ordered by rule_a, rule_b:
--   rule_a VARCHAR, rule_b VARCHAR
--   runs_compared BIGINT       runs evaluated under both rules
--   flips BIGINT               accepted under rule_a, not under rule_b
--   sample_run_ids VARCHAR[]   the first flips' run ids, sorted ([] when none)
WITH judged AS (
    SELECT run_id, rule, outcome = 'accepted' AS accepted
    FROM acceptance
)
SELECT
    a.rule AS rule_a,
    b.rule AS rule_b,
    count(*) AS runs_compared,
    count(*) FILTER (WHERE a.accepted AND NOT b.accepted) AS flips,
    list_slice(
        coalesce(
            list(a.run_id ORDER BY a.run_id) FILTER (WHERE a.accepted AND NOT b.accepted),
            CAST([] AS VARCHAR[])
        ),
        1,
        coalesce(CAST(getvariable('ocp_sample') AS BIGINT), 5)
    ) AS sample_run_ids
FROM judged AS a
INNER JOIN judged AS b ON b.run_id = a.run_id AND b.rule <> a.rule
GROUP BY a.rule, b.rule
ORDER BY rule_a, rule_b;
