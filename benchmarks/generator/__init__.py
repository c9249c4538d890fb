"""The pieces of ``benchmarks/generate.py``'s documents.

``world`` (the fixed teams, rules, shapes and how instants are written) ->
``attempts`` and ``signals`` of a run -> ``cases`` (the awkward ones) ->
``document`` (one document from ``(seed, index)``).
"""
