-- passk: pass@k and pass^k per rule, averaged over tasks (docs/statistics.md "Repeated tries of a task").
--
-- Purpose: the SQL twin of ocp_analytics.passk(dataset, rules, k=K) without
--   groups. A task tried in n decided runs (accepted or rejected), c of them
--   accepted: pass@k = 1 - C(n - c, k) / C(n, k) (at least one of k runs
--   drawn without replacement accepted) and pass^k = C(c, k) / C(n, k) (all
--   k accepted), each ratio a product of k factors (m - i) / (n - i) so no
--   binomial coefficient overflows; a factor at or below 0 makes it 0. Each
--   task weighs the same; a task counts for k only when n >= k. These count
--   whole runs of one task, not the attempts inside one run.
-- Parameters:
--   getvariable('ocp_k')  BIGINT, the largest k (required, at least 1).
--   those of acceptance (ocp_as_of, alternative_rules).
-- Output columns, ordered by rule, k:
--   rule VARCHAR
--   k BIGINT                      1 .. ocp_k
--   tasks BIGINT                  tasks with n >= k (those averaged)
--   pass_at_k DOUBLE              mean over those tasks (NULL when none)
--   pass_hat_k DOUBLE             mean over those tasks (NULL when none)
--   decided_without_task BIGINT   decided runs whose task_id is NULL, left out
--   as_of TIMESTAMPTZ             the instant of knowledge
WITH checked AS (
    -- stops the query with a clear message when ocp_k is missing or below 1
    SELECT
        CASE
            WHEN k_max IS NULL OR k_max < 1 THEN error(
                'ocp_k must be a whole number of tries, at least 1. Hint: SET VARIABLE ocp_k = 5;'
            )
            ELSE k_max
        END AS k_max
    FROM (SELECT TRY_CAST(getvariable('ocp_k') AS BIGINT) AS k_max)
),
per_task AS (
    SELECT
        acceptance.rule,
        runs.task_id,
        count(*) AS n,
        count(*) FILTER (WHERE acceptance.outcome = 'accepted') AS c
    FROM acceptance
    INNER JOIN runs ON runs.run_id = acceptance.run_id
    WHERE acceptance.outcome IN ('accepted', 'rejected')
    GROUP BY acceptance.rule, runs.task_id
),
rules AS (
    SELECT rule, any_value(as_of) AS as_of FROM acceptance GROUP BY rule
),
per_k AS (
    SELECT
        rules.rule,
        ks.k,
        per_task.task_id,
        per_task.n,
        CASE WHEN per_task.n >= ks.k THEN 1.0 - list_aggregate(
            list_transform(range(ks.k), lambda i: greatest(per_task.n - per_task.c - i, 0) / (per_task.n - i)),
            'product'
        ) END AS pass_at_k,
        CASE WHEN per_task.n >= ks.k THEN list_aggregate(
            list_transform(range(ks.k), lambda i: greatest(per_task.c - i, 0) / (per_task.n - i)),
            'product'
        ) END AS pass_hat_k,
        rules.as_of
    FROM rules
    CROSS JOIN checked
    CROSS JOIN (SELECT unnest(range(1, (SELECT k_max FROM checked) + 1)) AS k) AS ks
    LEFT JOIN per_task ON per_task.rule = rules.rule
)
SELECT
    rule,
    k,
    count(*) FILTER (WHERE task_id IS NOT NULL AND pass_at_k IS NOT NULL) AS tasks,
    avg(pass_at_k) FILTER (WHERE task_id IS NOT NULL) AS pass_at_k,
    avg(pass_hat_k) FILTER (WHERE task_id IS NOT NULL) AS pass_hat_k,
    coalesce(sum(n) FILTER (WHERE task_id IS NULL), 0)::BIGINT AS decided_without_task,
    any_value(as_of) AS as_of
FROM per_k
GROUP BY rule, k
ORDER BY rule, k;
