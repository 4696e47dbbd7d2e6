"""Benchmarks (print figures as JSON)."""
