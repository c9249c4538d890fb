-- ocp_literal_path(path): a file path DuckDB will read literally, never as a pattern.
--
-- Purpose: DuckDB globs every file name given to glob(), read_parquet() and
--   read_json(), even inside a list, so a dataset folder named
--   'odd[1]*?.dataset' would match other files (or none). Each glob
--   character is wrapped in a one-character class ('[' -> '[[]',
--   '*' -> '[*]', '?' -> '[?]'), which matches exactly that character.
--   Paths without those characters are returned unchanged.
-- Parameters:
--   path  VARCHAR, a file or folder path (literal).
-- Output: VARCHAR, the same path as a pattern that matches only itself.
-- Example: SELECT ocp_literal_path('runs[1]/*.json');  -- 'runs[[]1]/[*].json'
CREATE OR REPLACE MACRO ocp_literal_path(path) AS
regexp_replace(path, '([\[*?])', '[\1]', 'g');
