"""Benchmarks for agui-pipeline: a realistic workload, the parse benchmark, peers.

``python -m benchmarks`` prints the comparison table; :mod:`benchmarks.workload`
makes the streams every benchmark (and any test that wants volume) reads.
"""
