"""The proxy's settings from a hostile environment: every ``AGUI_PROXY_`` variable is parsed
as strictly as its flag, an error names the variable and its value, and an empty variable
is unset, never "every interface"."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from agui_pipeline._checking.url import transport_named
from agui_pipeline.cli import main
from agui_pipeline.cli import proxy as cli_proxy

UPSTREAM = "http://127.0.0.1:9/agent"
VARIABLES = [
    f"AGUI_PROXY_{name}"
    for name in (
        *("UPSTREAM", "HOST", "PORT", "LOG_FORMAT", "TRANSPORT", "MAX_CONCURRENCY"),
        *("HEADER_TIMEOUT", "BODY_TIMEOUT", "IDLE_TIMEOUT", "GRACE", "OTEL"),
    )
]
"""Every variable docs/guides/gateway.md lists."""


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What ``proxy`` would have served with: the call is recorded instead of served."""
    import agui_pipeline.http.proxy

    seen: dict[str, Any] = {}

    def record(upstream: str, **kwargs: Any) -> None:
        seen.update(kwargs, upstream=upstream)

    def metrics(otel: bool) -> None:
        seen["otel"] = otel

    monkeypatch.setattr(agui_pipeline.http.proxy, "proxy", record)
    monkeypatch.setattr(cli_proxy, "_proxy_metrics", metrics)
    for variable in VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    return seen


def run_proxy(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], *argv: str) -> int:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return main(["proxy", *argv])


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("AGUI_PROXY_PORT", "-1", "expected a port from 0 to 65535, got '-1'"),
        ("AGUI_PROXY_PORT", "65536", "expected a port from 0 to 65535, got '65536'"),
        ("AGUI_PROXY_PORT", "80x", "expected a port number, got '80x'"),
        ("AGUI_PROXY_TRANSPORT", "curl", "expected one of httpx, aiohttp, got 'curl'"),
        ("AGUI_PROXY_LOG_FORMAT", "yaml", "expected one of text, json, got 'yaml'"),
        ("AGUI_PROXY_OTEL", "maybe", "got 'maybe'"),
        ("AGUI_PROXY_MAX_CONCURRENCY", "0", "expected at least 1, got 0"),
        ("AGUI_PROXY_GRACE", "nan", "expected a finite number of seconds > 0, got 'nan'"),
        ("AGUI_PROXY_HEADER_TIMEOUT", "-5", "got '-5'"),
        ("AGUI_PROXY_HOST", " ", "expected an address to listen on, got an empty one"),
        ("AGUI_PROXY_UPSTREAM", "ftp://u:secret@x/", "expected an http:// or https:// URL"),
    ],
)
def test_a_bad_variable_is_a_usage_error_naming_it(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    served: dict[str, Any],
    variable: str,
    value: str,
    expected: str,
) -> None:
    argv = () if variable == "AGUI_PROXY_UPSTREAM" else ("--upstream", UPSTREAM)
    assert run_proxy(monkeypatch, {variable: value}, *argv) == 2
    said = capsys.readouterr().err
    assert f"agui-pipeline: {variable}: " in said and expected in said, said
    assert "--" not in said.split(":", 2)[1]  # no flag the user did not pass
    assert "secret" not in said
    assert not served  # nothing started


@pytest.mark.parametrize("value", ["false", "no", "off", "0", "FALSE", "Off"])
def test_an_otel_variable_that_says_off_leaves_opentelemetry_off(
    monkeypatch: pytest.MonkeyPatch, served: dict[str, Any], value: str
) -> None:
    assert run_proxy(monkeypatch, {"AGUI_PROXY_OTEL": value}, "--upstream", UPSTREAM) == 0
    assert served["otel"] is False


@pytest.mark.parametrize("value", ["true", "yes", "on", "1"])
def test_an_otel_variable_that_says_on_turns_it_on_and_the_flag_wins(
    monkeypatch: pytest.MonkeyPatch, served: dict[str, Any], value: str
) -> None:
    assert run_proxy(monkeypatch, {"AGUI_PROXY_OTEL": value}, "--upstream", UPSTREAM) == 0
    assert served["otel"] is True
    assert main(["proxy", "--upstream", UPSTREAM, "--no-otel"]) == 0
    assert served["otel"] is False


def test_empty_variables_are_unset(monkeypatch: pytest.MonkeyPatch, served: dict[str, Any]) -> None:
    empty = dict.fromkeys(VARIABLES, "")
    assert run_proxy(monkeypatch, empty, "--upstream", UPSTREAM) == 0
    assert served["host"] == "127.0.0.1" and served["port"] == 8000
    assert served["otel"] is False and served["transport"] is None  # httpx
    settings = served["settings"]
    assert (settings.grace, settings.header_timeout, settings.max_concurrency) == (30, 10, None)


def test_the_command_line_wins_and_the_environment_fills_the_rest(
    monkeypatch: pytest.MonkeyPatch, served: dict[str, Any]
) -> None:
    env = {
        "AGUI_PROXY_UPSTREAM": UPSTREAM,
        "AGUI_PROXY_PORT": "9100",
        "AGUI_PROXY_GRACE": "2.5",
        "AGUI_PROXY_TRANSPORT": "curl",  # overridden: never parsed
    }
    assert run_proxy(monkeypatch, env, "--port", "9200", "--transport", "httpx") == 0
    assert served["upstream"] == UPSTREAM and served["port"] == 9200
    assert served["settings"].grace == 2.5


def test_a_bad_flag_is_refused_as_strictly(capsys: pytest.CaptureFixture[str]) -> None:
    for command in (["proxy", "--upstream", UPSTREAM], ["serve", "run.sse"]):
        for flag, value in (("--port", "-1"), ("--port", "70000"), ("--host", "")):
            with pytest.raises(SystemExit) as ended:
                main([*command, flag, value])
            assert ended.value.code == 2
            assert f"argument {flag}: expected" in capsys.readouterr().err


def test_the_transport_is_one_of_the_named_ones() -> None:
    with pytest.raises(ValueError, match="one of httpx, aiohttp, got 'curl'"):
        transport_named("curl")


def test_an_empty_host_variable_listens_on_loopback_only(tmp_path: Path) -> None:
    """The real process: ``AGUI_PROXY_HOST=`` binds 127.0.0.1, not every interface."""
    log = tmp_path / "proxy.log"
    env = {"AGUI_PROXY_HOST": "", "AGUI_PROXY_UPSTREAM": UPSTREAM, "PATH": ""}
    command = [sys.executable, "-m", "agui_pipeline", "proxy", "--port", "0"]
    with log.open("wb") as stderr:
        process = subprocess.Popen(command, stderr=stderr, env=env)
    try:
        deadline = time.monotonic() + 30
        while "\n" not in log.read_text():
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        assert log.read_text().startswith("relaying http://127.0.0.1:"), log.read_text()
    finally:
        process.terminate()
        process.wait(timeout=30)
