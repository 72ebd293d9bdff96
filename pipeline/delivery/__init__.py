"""What leaves the pipeline for people and tools: the producer report, SARIF and JUnit."""
