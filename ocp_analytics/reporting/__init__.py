"""The nightly HTML report: the figures' data apart from the charts and the page.

``context`` reads the arguments, ``figures`` computes every figure's data in
one pass of the evaluation loop, ``charts`` draws them as static SVG,
``html`` renders the jinja2 template around them, and ``page`` holds the entry
:func:`~ocp_analytics.reporting.page.report`, writing the page and the data files.

A door: imports the layers below and ``api``; no other door.
"""
