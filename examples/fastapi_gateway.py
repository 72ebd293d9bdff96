"""A FastAPI gateway: the browser talks to it, it talks to the agent, the pipeline judges.

Your auth and your routing stay yours; the relay does the AG-UI half: it sends
the run input on, reads the agent's stream through the default pipeline, and
answers with what the pipeline delivered as SSE (502 for an upstream error
status, a closing RUN_ERROR for a stream it rejects or that is cut short).

    pip install 'agui-pipeline[serve]' fastapi uvicorn
    AGENT_URL=http://127.0.0.1:9000/ uvicorn examples.fastapi_gateway:app --port 8000
"""

# No `from __future__ import annotations`: FastAPI reads the route's annotations at run
# time, and `user` is local to build_app.
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Annotated, Any

from agui_pipeline import Pipeline, RelayResponse, Upstream
from fastapi import Body, Depends, FastAPI, Header, HTTPException


def build_app(agent_url: str, tokens: Mapping[str, str]) -> FastAPI:
    """The gateway for the agent at ``agent_url``; ``tokens`` maps bearer tokens to users."""
    upstream = Upstream(agent_url, pipeline=Pipeline())

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        await upstream.aclose()  # the connection pool every relayed run shared

    app = FastAPI(lifespan=lifespan)

    def user(authorization: Annotated[str, Header()] = "") -> str:
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or token not in tokens:
            raise HTTPException(401, "a bearer token is required")
        return tokens[token]

    @app.post("/agent")
    async def agent(
        run_input: Annotated[dict[str, Any], Body()], who: Annotated[str, Depends(user)]
    ) -> RelayResponse:
        return RelayResponse(upstream, run_input, headers={"X-User": who})

    return app


if __name__ != "fastapi_gateway":  # imported by uvicorn as examples.fastapi_gateway
    app = build_app(os.environ.get("AGENT_URL", "http://127.0.0.1:9000/"), {"demo": "demo"})
