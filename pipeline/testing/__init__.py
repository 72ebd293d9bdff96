"""For testing agents and consumers: the pytest plugin, the conformance runner, workloads."""
