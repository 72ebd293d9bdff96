"""The HTTP bindings: the client and its transports, serve, the relay, the proxy, the tap
and its telemetry."""
