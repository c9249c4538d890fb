"""What ingestion and the engine both read of an OCP document: the rule format
(``rules``) and where a signal stands among its run's attempts (``links``).

Imports only the ground.
"""
