"""Every byte on disk: the dataset's layout, commit records and versions, the
storage backends (a local folder, S3, Azure) and the parallel Parquet writer.

Knows no semantics: imports only the ground (``schemas``, ``exceptions``).
"""
