"""The contract between :class:`~agui_pipeline.HttpAgent` and the HTTP library under it.

A transport does one thing: send a :class:`TransportRequest` and hand back a
:class:`TransportResponse` whose body is the raw bytes as they arrive. Everything the
binding asks — the run input, ``Accept``, authentication (already a header here), the
status and content-type rules, the bounded inflating of a compressed body, the idle
window and the deadline, retries and resuming — is the agent's, the same over every
transport. httpx's ``AsyncBaseTransport.handle_async_request`` is the model: one public
method, a request value in, a response value out.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType

from agui_pipeline.errors import AguiPipelineError


@dataclass(frozen=True, slots=True)
class TransportRequest:
    """One request for a transport to send, exactly as given.

    ``headers`` are complete: ``Content-Type``, ``Accept``, ``Accept-Encoding``, any
    ``Authorization`` and ``Last-Event-ID``. A transport adds only what its HTTP library
    adds on its own (``Host``, ``Content-Length``), and must not decompress the response:
    the agent undoes ``Content-Encoding`` itself, bounded.
    """

    url: str
    content: bytes
    headers: Mapping[str, str]
    method: str = "POST"
    read_timeout: float | None = None
    """Seconds one read of the response (its headers, then each read of the body) may
    wait; ``None``: no bound of the transport's own (the agent still bounds the whole)."""


@dataclass(frozen=True, slots=True, eq=False)
class TransportResponse:
    """A response as the transport received it: status, headers, and the body still unread.

    ``headers`` holds every header line as ``(name, value)``, names in any case and
    repeated names repeated. ``body`` yields the bytes as sent (still compressed, if they
    were), one read at a time, and ends when the response does. While reading it:

    - a read that waits longer than the request's ``read_timeout`` raises
      :class:`TimeoutError`;
    - a connection that fails before the body ends raises :class:`ConnectionLost`
      (``raise ConnectionLost(...) from error``, so the diagnostic names the cause).

    ``aclose`` releases the connection; the agent calls it once, whether the body was read
    to its end or not.
    """

    status: int
    headers: Sequence[tuple[str, str]]
    body: AsyncIterator[bytes]
    aclose: Callable[[], Awaitable[None]]

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (any case), or ``None``."""
        name = name.lower()
        return next((value for key, value in self.headers if key.lower() == name), None)

    def header_values(self, name: str) -> list[str]:
        """Every value of header ``name`` (any case), in the order received."""
        name = name.lower()
        return [value for key, value in self.headers if key.lower() == name]


class ConnectionLost(AguiPipelineError):
    """The connection failed while a response body was being read.

    A transport raises it from its body; the agent then reports
    ``transport.connection-lost`` and judges the stream as it stands, or resumes it
    (``Retries(resume=True)``).
    """


class Transport(ABC):
    """How an :class:`~agui_pipeline.HttpAgent` reaches the agent: sends a request, hands
    over the response with its raw body.

    Two exist, with the same behaviour: :class:`~agui_pipeline.HttpxTransport`, the
    default (the ``http`` extra), and :class:`~agui_pipeline.AiohttpTransport` (the
    ``aiohttp`` extra). To write another, implement :meth:`send` (and :meth:`aclose` if
    the transport owns a client). An agent closes its transport when it closes; a
    transport closes the client or session it made, never one it was given.
    """

    @abstractmethod
    async def send(self, request: TransportRequest) -> TransportResponse:
        """Send ``request`` and return the response once its headers have arrived.

        A connection that cannot be made, or a request that cannot be sent, raises
        :class:`~agui_pipeline.RequestFailed` (``connecting=True`` when the connection
        itself failed: only those are retried). No response headers within
        ``request.read_timeout`` raises :class:`TimeoutError`. Any status is a response:
        the agent judges it.
        """

    async def aclose(self) -> None:  # noqa: B027 (a transport owning nothing need not write it)
        """Close the client or session this transport made (one given it stays open)."""

    async def __aenter__(self) -> Transport:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
