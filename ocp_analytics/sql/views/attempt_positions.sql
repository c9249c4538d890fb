-- attempt_positions: where each attempt id of a run version stands (docs/figures.md "The attempt at acceptance").
--
-- Purpose: order the run's attempts by started_at with an unknown time LAST,
--   then by position in the document (att_idx). pos is the 1-based place in
--   that order, counting every attempt (parallel copies, other nodes, and
--   attempts without an id). n is the attempt's own n or, when absent, its
--   1-based place among attempts of the same node (attempts without a node
--   form one group). When ids repeat, the first in that order wins.
-- Parameters: none.
-- Output columns:
--   doc_id BIGINT, attempt_id VARCHAR (never NULL)
--   pos BIGINT    1-based position among all attempts of the run
--   n BIGINT      n, or the position within the node
--   round BIGINT  round as written (NULL when absent)
--   node VARCHAR
CREATE OR REPLACE VIEW attempt_positions AS
WITH ordered AS (
    SELECT
        doc_id,
        attempt_id,
        node,
        round,
        row_number() OVER (
            PARTITION BY doc_id
            ORDER BY started_at ASC NULLS LAST, att_idx ASC
        ) AS pos,
        coalesce(
            n,
            row_number() OVER (
                PARTITION BY doc_id, node
                ORDER BY started_at ASC NULLS LAST, att_idx ASC
            )
        ) AS n
    FROM attempts
)
SELECT doc_id, attempt_id, pos, n, round, node
FROM ordered
WHERE attempt_id IS NOT NULL
QUALIFY row_number() OVER (PARTITION BY doc_id, attempt_id ORDER BY pos) = 1;
