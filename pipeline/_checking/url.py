"""Checking an agent's URL: the run input POSTed, the stream read through the default
pipeline over the HTTP client chosen (the ``http`` extra, imported only here)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agui_pipeline._checking.meter import StreamMeter
    from agui_pipeline.http.transport import Transport
    from agui_pipeline.stage import StageFactory

TRANSPORTS = ("httpx", "aiohttp")
"""What ``--transport`` names: the HTTP client a URL is read through (httpx, the default)."""


def transport_named(name: str) -> Transport | None:
    """The transport ``--transport NAME`` asks for (``None``: the agent's default, httpx);
    raises ``ValueError`` naming the extra when aiohttp is not installed."""
    if name == "httpx":
        return None
    if name not in TRANSPORTS:
        raise ValueError(f"--transport expects one of {', '.join(TRANSPORTS)}, got {name!r}")
    try:
        from agui_pipeline.http.aiohttp_transport import AiohttpTransport
    except ModuleNotFoundError as error:
        raise ValueError(
            f"--transport aiohttp needs the 'aiohttp' extra (no module {error.name!r}): "
            "pip install 'agui-pipeline[aiohttp]'"
        ) from None
    return AiohttpTransport()


def parse_headers(values: Sequence[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for value in values:
        name, colon, content = value.partition(":")
        if not colon or not name.strip():
            raise ValueError(f"--header expects NAME:VALUE, got {value!r}")
        headers[name.strip()] = content.strip()
    return headers


def check_url(
    url: str,
    *,
    framing: str | None,
    peer_version: str | None,
    headers: Sequence[str],
    run_input: dict[str, Any] | None,
    capabilities: Any = None,
    progress: StreamMeter | None = None,
    idle_timeout: float | None = 300.0,
    max_duration: float | None = None,
    transport: str = "httpx",
    middleware: Sequence[StageFactory] = (),
    conversation: bool = False,
) -> Any:
    """Run ``check`` against an agent URL; returns the RunResult (raises ValueError on misuse).

    ``run_input`` is POSTed (a minimal one for a fresh thread when ``None``);
    ``capabilities`` is the agent's declaration, to reconcile the stream with;
    ``idle_timeout`` and ``max_duration`` are the pipeline's (``--idle-timeout``,
    ``--max-duration``); ``transport`` names the HTTP client (``--transport``);
    ``middleware`` runs before enforce (``--middleware``); ``conversation``: the result keeps
    the Conversation (``--conversation``), else the native core may judge the stream without
    building its events.
    """
    from agui_pipeline._engine.pipeline import Pipeline
    from agui_pipeline.http.client import HttpAgent
    from agui_pipeline.subscribers import Sink

    sinks: list[Sink] = [progress] if progress else []
    # --framing proto asks the agent for the binary binding; the response's Content-Type
    # then picks the parser (an agent without the binding answers SSE).
    binary = framing == "proto"
    pipeline = Pipeline(
        middleware=middleware,
        framing=None if binary else framing,
        peer_max_protocol_version=peer_version,
        capabilities=capabilities,
        sinks=sinks,
        on_diagnostic=progress.diagnostic if progress else None,
        idle_timeout=idle_timeout,
        max_duration=max_duration,
    )
    body = run_input if run_input is not None else fresh_input()
    chosen = transport_named(transport)

    async def main() -> Any:
        async with (
            HttpAgent(
                url,
                pipeline=pipeline,
                headers=parse_headers(headers),
                binary=binary,
                transport=chosen,
            ) as agent,
            agent.open(body) as stream,
        ):
            # The report needs no events, and the Conversation only if it shows it.
            return await stream.drain(conversation=conversation)

    from agui_pipeline._engine.incremental import run_in_loop

    try:
        return run_in_loop(main)
    finally:
        if progress is not None:
            progress.close()


def fresh_input() -> dict[str, Any]:
    """A minimal run input for a fresh thread (``check URL`` without ``--input``)."""
    import uuid

    return {"threadId": f"thread-{uuid.uuid4()}", "runId": f"run-{uuid.uuid4()}", "messages": []}
