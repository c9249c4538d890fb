"""Benchmarks for ocp-analytics: a seeded document generator and figure scripts."""
