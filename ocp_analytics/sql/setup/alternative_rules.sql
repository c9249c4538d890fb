-- alternative_rules: the user's alternative acceptance rules (empty by default).
--
-- Purpose: every row is evaluated against every run by the acceptance view,
--   next to each run's recorded rule. Insert rows to compare bars, e.g.
--     INSERT INTO alternative_rules (name, requires) VALUES ('tests+review', ['tests', 'review']);
--     INSERT INTO alternative_rules (name, score_name, score_target, score_better)
--         VALUES ('runtime_s<=3600', 'runtime_s', 3600, 'lower');
--   NULL means "absent", with the defaults of docs/figures.md "The rule": requires [] (no
--   verdict needed; duplicate names count once), no score part,
--   excludes_events ['revert', 'incident'] ([] means no event excludes),
--   window_days 14. score_scale does not change any figure.
--   Kept across a second run of setup (CREATE TABLE IF NOT EXISTS).
-- Parameters: none.
-- Output columns: name VARCHAR (unique, not 'recorded'), definition VARCHAR,
--   requires VARCHAR[], score_name VARCHAR, score_target DOUBLE,
--   score_better VARCHAR ('higher' | 'lower'), score_scale VARCHAR,
--   excludes_events VARCHAR[], window_days BIGINT (>= 0).
CREATE TABLE IF NOT EXISTS alternative_rules (
    name VARCHAR PRIMARY KEY CHECK (name <> 'recorded'),
    definition VARCHAR,
    requires VARCHAR[],
    score_name VARCHAR,
    score_target DOUBLE,
    score_better VARCHAR CHECK (score_better IN ('higher', 'lower')),
    score_scale VARCHAR,
    excludes_events VARCHAR[],
    window_days BIGINT CHECK (window_days >= 0),
    CHECK (score_name IS NULL OR (score_target IS NOT NULL AND score_better IS NOT NULL))
);
