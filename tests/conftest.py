"""Shared test helpers: the AG-UI spec artifacts, the two tiers, and a one-call runner.

The suite runs on any clone. The tests that need the official AG-UI 1.1 artifacts
(``schema.json``, the conformance corpus, …) find them through one setting,
``AGUI_SPEC_DIR`` (default: ``../shared`` beside the checkout), and skip with a reason
naming it when they are absent. ``AGUI_FULL_TIER=1`` (set by ``.ci/run``) turns every such
skip — and the packaging test's "no network" skip — into a failure, so CI runs it all.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import anyio
import pytest
from agui_pipeline import Batch, Pipeline, RunResult, Stage, _cores
from agui_pipeline._engine import chain, core, deliver, judge
from agui_pipeline._engine.faults import Ended
from hypothesis import settings

if TYPE_CHECKING:
    from agui_pipeline.http.client import HttpAgent

ROOT = Path(__file__).resolve().parents[1]

SPEC_DIR_SETTING = "AGUI_SPEC_DIR"
"""Where the AG-UI 1.1 spec artifacts are: a folder in one of :data:`SPEC_LAYOUTS`."""
DEFAULT_SPEC_DIR = ROOT.parent / "shared"
"""``../shared`` beside the checkout (read-only; CI has it there)."""
FULL_TIER_SETTING = "AGUI_FULL_TIER"
"""``1``: a test that cannot run here (artifacts or network absent) fails instead of skipping."""

SPEC_LAYOUTS = (
    # (the 1.1 spec files: schema.json, DEPRECATIONS.md, proto-freeze.txt; the .mdx pages;
    #  the corpus's streams), relative to AGUI_SPEC_DIR; the first whose schema.json and
    #  streams/ both exist wins.
    ("reference/agui-1.1", "reference/agui-1.1/spec", "conformance/streams"),  # ../shared
    ("1.1", "1.1", "1.1/conformance/streams"),  # the AG-UI repository's spec/ folder
    (".", ".", "conformance/streams"),  # its spec/1.1 folder itself
)


@dataclass(frozen=True)
class SpecArtifacts:
    """The AG-UI 1.1 artifacts found under ``AGUI_SPEC_DIR`` (read-only)."""

    files: Path
    pages: Path
    corpus: Path

    @property
    def schema_path(self) -> Path:
        return self.files / "schema.json"

    @property
    def deprecations(self) -> Path:
        return self.files / "DEPRECATIONS.md"

    @property
    def proto_freeze(self) -> Path:
        return self.files / "proto-freeze.txt"

    def fixtures(self) -> list[Path]:
        """The corpus's fixture files, sorted by name."""
        return sorted(self.corpus.glob("*.json"))


def spec_dir() -> Path:
    """The folder ``AGUI_SPEC_DIR`` names (relative to the working directory), or the default."""
    chosen = os.environ.get(SPEC_DIR_SETTING)
    return Path(chosen).expanduser().resolve() if chosen else DEFAULT_SPEC_DIR


@functools.cache
def find_spec_artifacts() -> SpecArtifacts | None:
    """The artifacts in the first layout that matches, or ``None``."""
    base = spec_dir()
    for files, pages, corpus in SPEC_LAYOUTS:
        found = SpecArtifacts(base / files, base / pages, base / corpus)
        if found.schema_path.is_file() and found.corpus.is_dir():
            return found
    return None


def full_tier() -> bool:
    return os.environ.get(FULL_TIER_SETTING) == "1"


def unavailable(reason: str) -> NoReturn:
    """Skip the running test for ``reason`` — or fail it, in the full tier."""
    if full_tier():
        pytest.fail(f"{reason} [{FULL_TIER_SETTING}=1: this test must run]", pytrace=False)
    pytest.skip(reason)


def spec_artifacts() -> SpecArtifacts:
    """The spec artifacts; the test calling this skips (full tier: fails) when they are absent.

    The one way a test reaches them: call it inside the test (or its fixture), never at import.
    """
    found = find_spec_artifacts()
    if found is None:
        unavailable(
            f"needs the AG-UI 1.1 spec artifacts (schema.json, conformance corpus): set "
            f"{SPEC_DIR_SETTING} to a folder holding them (default ../shared; none in "
            f"{spec_dir()}; see docs/contributing.md)"
        )
    return found


@functools.cache
def spec_schema() -> dict[str, Any]:
    """``schema.json``, parsed once (shared by the tests: do not mutate it)."""
    return dict(json.loads(spec_artifacts().schema_path.read_text(encoding="utf-8")))


def corpus_file(name: str) -> Path:
    """The corpus fixture named ``name`` (its file name without ``.json``)."""
    return spec_artifacts().corpus / f"{name}.json"


def corpus_paths(selected: Callable[[Path], bool] = lambda path: True) -> list[Any]:
    """The corpus fixtures as ``parametrize`` values, each with its name as the test id.

    Without the artifacts, one placeholder marked ``spec``, so the test still collects and
    then skips (or fails, in the full tier) with the reason.
    """
    found = find_spec_artifacts()
    if found is None:
        return [pytest.param(None, id="corpus-absent", marks=pytest.mark.spec)]
    return [pytest.param(path, id=path.stem) for path in found.fixtures() if selected(path)]


@pytest.hookimpl(tryfirst=True)  # before the test's fixtures (a server, say) start
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked ``spec`` (as :func:`corpus_paths`' placeholder is) needs the artifacts."""
    if item.get_closest_marker("spec") is not None:
        spec_artifacts()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if anything imported the repository's folders as top-level modules, or
    if a process a test started is still running.

    The repository root is on ``sys.path`` while testing, so ``import pipeline`` would work
    here and nowhere else: the library is ``agui_pipeline`` only. A process left running
    holds its port and its files into the next run; an xdist worker hands its own leftovers
    to the controller, which fails the run for them.
    """
    strays = sorted(name for name in sys.modules if name.split(".")[0] in ("pipeline", "stages"))
    if strays:
        print(f"\nimported as top-level modules (use agui_pipeline): {strays}", file=sys.stderr)
        session.exitstatus = max(exitstatus, pytest.ExitCode.TESTS_FAILED)
    left = _left_running()
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller reports
        workeroutput[LEFT_RUNNING] = left
        return
    _fail_on_left_running(session, left + session.config.stash.get(_WORKERS_LEFT, []))


# -- no process left behind ------------------------------------------------------------------

TEST_PROCESS = "AGUI_PIPELINE_TEST_PROCESS"
"""Set by each pytest process (the run's, and each xdist worker's) to its own pid: every
process a test starts inherits it, and keeps it when its parent dies and it is reparented."""
LEFT_RUNNING = "agui_pipeline_left_running"
"""The key under which an xdist worker hands its leftover processes to the controller."""
LIFETIME_HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")
"""Helpers the standard library starts once and ends with the interpreter (multiprocessing's,
which a Dask cluster starts): not a test's to end."""


def pytest_configure(config: pytest.Config) -> None:
    os.environ[TEST_PROCESS] = str(os.getpid())


def end_process(process: subprocess.Popen[Any], grace: float = 10) -> None:
    """End ``process`` whatever state it is in: SIGTERM, ``grace`` seconds, then SIGKILL."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=grace)


def _left_running() -> list[str]:
    """The processes still alive that this pytest process's tests started (Linux: /proc),
    each as ``pid command line``; a process that is ending is given a second to go."""
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    marker = f"{TEST_PROCESS}={os.getpid()}".encode()
    found: dict[int, str] = {}
    for _ in range(20):
        found = {}
        for entry in proc.iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if marker not in (entry / "environ").read_bytes().split(b"\0"):
                    continue
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:  # gone meanwhile, or a zombie's
                continue
            if command and not any(helper in command for helper in LIFETIME_HELPERS):
                found[int(entry.name)] = command.strip()
        if not found:
            return []
        time.sleep(0.05)
    return [f"{pid} {command}" for pid, command in sorted(found.items())]


def _fail_on_left_running(session: pytest.Session, left: list[str]) -> None:
    """Name the leftovers, fail the run, and end them (so that one run's leak does not break
    the next)."""
    if not left:
        return
    listed = "".join(f"\n  {line}" for line in left)
    print(f"\nprocesses started by the tests still running at the end:{listed}", file=sys.stderr)
    session.exitstatus = max(session.exitstatus, pytest.ExitCode.TESTS_FAILED)
    for line in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(line.split()[0]), signal.SIGKILL)


def pytest_testnodedown(node: Any, error: object) -> None:
    """(pytest-xdist, in the controller) A worker's leftovers, gathered for the run's end."""
    left = getattr(node, "workeroutput", {}).get(LEFT_RUNNING, [])
    node.config.stash.setdefault(_WORKERS_LEFT, []).extend(left)


_WORKERS_LEFT = pytest.StashKey[list[str]]()


def run(source: Any, pipeline: Pipeline | None = None, **kwargs: Any) -> RunResult:
    """Run one stream through ``pipeline`` (default: the default pipeline) under asyncio."""
    chosen = pipeline or Pipeline()
    return anyio.run(lambda: chosen.run(source, **kwargs))


# -- every rule on every path -----------------------------------------------------------
#
# The engine runs each run of built-in stages as one object, of one of several
# implementations (``core.BUILT_IN_RUNS``; ``_engine/builtin.py``). A rule suite runs on
# each: its module says ``pytestmark = pytest.mark.usefixtures("built_in_run")``, and
# every stream its tests run (``run``, ``Pipeline.run``, the CLI, ``through_built_in``)
# goes through the implementation the fixture chose, as aiohttp's parser tests run on
# its Python and C parsers. A bug in one implementation alone fails its rule's own
# file. ``tests/test_chain.py`` compares them on random streams besides.

BUILT_IN_RUN_PATHS = ["batch", "fused", "deliver"]
"""The implementations every rule suite runs on: each stage's ``process`` in turn, the
fused pass (each stage's ``step``), both from a stream's first read; and the native core as
it ships: deliver mode (``_engine/deliver.py``: the judge while it is sure of the stream, the
engine's own run after), and judge mode where only the verdict is asked for
(``_engine/judge.py``: ``check FILE``, the conformance runner). An entry the engine does not
have (an extension not built here, or turned off by ``AGUI_PIPELINE_PURE``) skips with the
reason."""


@pytest.fixture(params=BUILT_IN_RUN_PATHS)
def built_in_run(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The engine runs its runs of built-in stages with the implementation named by the
    parameter. Under ``fused`` every read is stepped, whatever its size (the engine
    steps only small ones): every stream a test runs takes the stepped path. Under
    ``batch`` and ``fused`` deliver mode and judge mode are off; under ``deliver`` the
    engine is as it ships."""
    name = str(request.param)
    if name == "deliver":
        if _cores.native is None:
            reason = f"deliver mode needs the native core ({_cores.ACTIVE})"
            if _cores.PURE_SETTING in os.environ:
                pytest.skip(reason)
            unavailable(reason)
        return name
    monkeypatch.setattr(deliver, "delivers", python_stages_only)
    monkeypatch.setattr(judge, "judges", never_judged)
    if name not in core.BUILT_IN_RUNS:
        pytest.skip(f"the {name!r} implementation of a built-in run is not built here")
    monkeypatch.setattr(core, "BUILT_IN_RUN", name)
    if name == "fused":
        monkeypatch.setattr(chain, "STEPPED_READS", sys.maxsize)
    return name


def python_stages_only(plan: object, ctx: object) -> bool:
    """``deliver.delivers`` for a test whose streams go through the Python stages from their
    first read: never."""
    return False


def never_judged(pipeline: object) -> bool:
    """``judge.judges`` where the streams go through the Python stages from their first
    read: judge mode (``check FILE``, the conformance runner) stands in for none."""
    return False


@pytest.fixture
def python_stages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deliver mode off: for a test that watches or breaks a Python stage itself, which the
    native judge would stand in for on a stream it is sure of."""
    monkeypatch.setattr(deliver, "delivers", python_stages_only)


def in_a_child(script: str) -> str:
    """``script`` for ``python -c``, first made to run its runs of built-in stages as this
    process does (and deliver mode off where it is): the fixture's choice does not reach a
    child by itself."""
    deliver_off = (
        "from agui_pipeline._engine import deliver as _deliver, judge as _judge\n"
        "_deliver.delivers = lambda plan, ctx: False\n"
        "_judge.judges = lambda pipeline: False\n"
        if deliver.delivers is python_stages_only
        else ""
    )
    return (
        "from agui_pipeline._engine import chain as _chain, core as _core\n"
        f"_core.BUILT_IN_RUN, _chain.STEPPED_READS = {core.BUILT_IN_RUN!r}, "
        f"{chain.STEPPED_READS}\n{deliver_off}{script}"
    )


def child_prints(script: str, timeout: float) -> str:
    """What ``script`` prints, run by ``python -c`` from the repository root as this process
    runs its stages (:func:`in_a_child`): a child of its own, so its peak memory is its own
    (``tests/peak.py``). A child that fails fails the test, with the end of what it said."""
    done = subprocess.run(
        [sys.executable, "-c", in_a_child(script)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def through_built_in(stages: list[Stage], batch: Batch) -> Batch:
    """``batch`` through built-in ``stages`` as the engine runs them (the implementation
    ``built_in_run`` chose): what the last passed. A fault is raised as itself, its
    ``kept`` what of the batch went on past them, as the engine delivers it."""
    built_in_run = core.BUILT_IN_RUNS[core.BUILT_IN_RUN](stages)
    try:
        return built_in_run.run(batch)
    except Ended as ended:
        ended.fault.kept = ended.delivered
        raise ended.fault from None


@pytest.fixture(autouse=True)
def _no_forced_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CI runner may set FORCE_COLOR, which colours the text report even in a pipe or a
    StringIO: the tests that want it (tests/test_cli_terminal.py) set it themselves."""
    monkeypatch.delenv("FORCE_COLOR", raising=False)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Tests marked ``@pytest.mark.anyio`` run under both backends."""
    return str(request.param)


TRANSPORTS = ["httpx", "aiohttp"]


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    """The HTTP client a transport test reads through: each runs over httpx (the default)
    and over aiohttp (the ``aiohttp`` extra, which the test extra pins). Without aiohttp
    the aiohttp half skips (fails in the full tier). aiohttp runs under asyncio only, so
    the trio runs of the aiohttp half are not collected (``pytest_collection_modifyitems``).
    """
    name = str(request.param)
    if name == "aiohttp" and importlib.util.find_spec("aiohttp") is None:
        unavailable("needs aiohttp (the 'aiohttp' extra; pip install -e . --group test pins it)")
    return name


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out aiohttp under trio: it runs under asyncio only (a test checks it says so)."""
    kept, dropped = [], []
    for item in items:
        params = getattr(item, "callspec", None)
        chosen = {} if params is None else params.params
        if chosen.get("transport") == "aiohttp" and chosen.get("anyio_backend") == "trio":
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@asynccontextmanager
async def http_agent(
    url: str, transport: str, *, plain: bool = False, **options: Any
) -> AsyncIterator[HttpAgent]:
    """An :class:`HttpAgent` reading through ``transport`` (its own client or session),
    closed on exit. ``plain``: over httpx, a client that never loads CA certificates
    (plain HTTP only; loading them costs ~70 ms a client)."""
    import httpx
    from agui_pipeline.http.client import HttpAgent

    if transport == "aiohttp":
        from agui_pipeline.http.aiohttp_transport import AiohttpTransport

        async with HttpAgent(url, transport=AiohttpTransport(), **options) as agent:
            yield agent
        return
    if not plain:
        async with HttpAgent(url, **options) as agent:
            yield agent
        return
    async with (
        httpx.AsyncClient(verify=False) as client,
        HttpAgent(url, client=client, **options) as agent,
    ):
        yield agent


# Hypothesis profiles: `default` keeps the test command fast; `.ci/run` loads `ci` (ten
# times the examples, derandomized so that a CI run is repeatable, a failure printed with
# its blob); `HYPOTHESIS_PROFILE=fuzz` runs the long profile by hand. A test that sets its
# own `max_examples` keeps it under every profile.
# No deadline in any profile: speed is measured by the benchmarks, not by timed tests,
# and a loaded machine must not fail a correct property.
settings.register_profile("default", max_examples=100, deadline=None)
settings.register_profile(
    "ci", max_examples=1_000, deadline=None, derandomize=True, print_blob=True
)
settings.register_profile("fuzz", max_examples=5_000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def mypy_strict(*files: Path) -> subprocess.CompletedProcess[str]:
    """``mypy --strict`` on ``files`` as a user would run it, from the repository's root."""
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *map(str, files)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
