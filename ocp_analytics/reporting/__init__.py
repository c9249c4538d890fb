"""The nightly HTML report: the figures' data apart from the charts and the page.

A door: imports the layers below and ``api``; no other door.
"""
