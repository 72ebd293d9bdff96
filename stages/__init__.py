"""The stages of the default pipeline, one module each, in the order they run:
parse, compat, enforce, expand, verify, reconcile, metadata, dispatch."""
