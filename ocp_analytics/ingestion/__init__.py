"""Documents to tables to a batch: find and read sources, decode, flatten, commit.

Imports the ground (``schemas``, ``exceptions``), ``model`` and ``store``;
never ``engine``. The public names are re-exported by ``ocp_analytics``.

The modules, in the order a document passes them:

``sources``     find sources, open them, the SHA-256 that skips a re-read
``read``        a source's bytes block by block (decompressed) and its lines, in place
``spans``       where a chunk's texts lie (string views over the blocks), ``ChunkMeta``
``chunks``      a source as chunks of document texts: NDJSON, ``.json``, a stream
``decode``      texts → the declared document struct (the fast path, and routing)
``typed``       the typed path: mistyped values read many at a time, their JSON types kept
``sanitize``    the slow path: one document read in Python, its defects named
``tables``      the decoded chunk → runs, attempts, signals, rules, artifacts, findings
``timestamps``  RFC 3339 text → instants
``findings``    the finding rows of a table's columns
``members``     ``run.labels`` and ``run.acceptance_rule``, read from their own text
``quarantine``  the quarantine rows: read problems, rejected texts, documents with no run
``versions``    which version of a run id is current within a batch
``summary``     the reconciled counts an ingest returns (runs and late events alike)
``batch``       the ingest of runs: the batch loop, chunk workers, ``ingest``
``events``      the ingest of late events, and the events no run matches
"""
