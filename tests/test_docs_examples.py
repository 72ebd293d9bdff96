"""Every code block of README.md and of the documentation (docs/**/*.md) runs as written.

What a block is and how it runs is visible on the rendered page, never in a hidden marker:

- Every fence names its kind. ``python`` runs; ``console`` (commands after ``$ ``, each
  followed by what it prints) and ``bash`` (commands) run; ``text``, ``toml``, ``json``
  and the like are shown, not run. An unnamed fence fails here.
- A ``python`` block is a program: it runs alone in a fresh interpreter from the
  repository's root. One with ``await`` at top level runs as it would in
  ``python -m asyncio`` (or a notebook).
- A caption, a line of its own in italics just above the block, places it:

  - ``*`NAME.py`*`` starts the example NAME.py, and ``*`NAME.py`, continued*`` continues
    it: the example's blocks so far, then this one, run as one program;
  - ``*`test_NAME.py`*`` is a pytest module, run with pytest (and the plugin this package
    registers);
  - ``*Against `agui-pipeline serve ARGS --port N`:*`` runs the block as written, as a
    file, while that command serves on port N of a loopback of the block's own (as the
    command blocks run, below); the README's blocks are placed this way, so a reader can
    paste each as it is into a file;
  - ``*Against `agui-pipeline serve ARGS`, at `url`:*`` runs the block while that command
    serves on 127.0.0.1, with its address in ``url`` (a page of the site, where a block may
    also ``await`` at top level);
  - ``*Not run here: REASON*`` leaves the block out, saying why.

- ``bash`` and ``console`` blocks run from the repository's root in a network namespace of
  their own (``unshare``), where only loopback exists: a command that needs anything
  beyond it fails. A block that installs from a package index (``pip install``,
  ``npm ci``) is not run, since no index is reachable from there (.ci/run installs the
  project that way). A command ending in ``&`` runs in the background until the block
  ends, and when it names a ``--port`` the next command waits for the port to listen.
  In a ``bash`` block a command may exit 1, as ``check`` does on a stream it fails;
  any higher status (a usage error, a command not found) fails the block. A ``console``
  block's output is compared with what its commands print (standard output and error
  together; a background command's is not shown).
- Whatever happens, nothing a block starts outlives it: a background command is the shell's
  job itself (``exec``), ended when the block ends, and every block runs in a process group
  of its own, ended as a whole (tests/conftest.py fails the run if a process is left).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT, end_process, unavailable

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
"""Where the examples are: the README and every page of the site."""

RUN = {"python", "console", "bash"}
SHOWN = {"text", "toml", "json", "yaml", "xml", "proto"}

FENCE = re.compile(r"^([ \t]*)```([^\n`]*)\n(.*?)^\1```[ \t]*$", flags=re.DOTALL | re.MULTILINE)
"""A fenced block, at the margin or indented (in a list item) as a whole."""
NAMED = re.compile(r"\*`(?P<name>[\w.-]+\.py)`(?P<continued>, continued)?\*")
AGAINST = re.compile(r"\*Against `agui-pipeline serve (?P<args>[^`]+)`, at `url`:\*")
SERVING = re.compile(r"\*Against `(?P<command>agui-pipeline serve [^`]*--port \d+[^`]*)`:\*")
"""A block placed beside a server it reaches at the address the command names."""
NOT_RUN = re.compile(r"\*Not run here: (?P<reason>.+)\*")
INSTALLS = re.compile(r"\bpip install\b|\bnpm (ci|install)\b")
PORT = re.compile(r"--port (\d+)")
BACKGROUND = re.compile(r"\s&\s*(#.*)?$")
"""A command put in the background (a comment may follow the ``&``)."""

ASYNCIO = """\
import ast, asyncio, sys

path = sys.argv[1]
sys.argv = sys.argv[1:]
code = compile(open(path).read(), path, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
awaiting = eval(code, {"__name__": "__main__", "__file__": path})
if awaiting is not None:
    asyncio.run(awaiting)
"""
"""What ``python -m asyncio`` does with a block that awaits at top level, as a script."""


@dataclass(frozen=True)
class Block:
    document: Path
    line: int
    kind: str
    code: str
    caption: str
    program: str
    """The code that runs: for a continued example, its earlier blocks and this one."""

    @property
    def where(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"


def blocks(document: Path) -> Iterator[Block]:
    text = document.read_text(encoding="utf-8")
    examples: dict[str, str] = {}
    for fence in FENCE.finditer(text):
        line = text.count("\n", 0, fence.start()) + 1
        before = text[: fence.start()].rstrip("\n").rpartition("\n")[2].strip()
        caption = before if before.startswith("*") and before.endswith("*") else ""
        kind, code = fence[2].split(" ")[0], textwrap.dedent(fence[3])
        program = code
        named = NAMED.fullmatch(caption)
        if named and not named["name"].startswith("test_"):
            if named["continued"]:
                assert named["name"] in examples, f"{document}:{line}: nothing to continue"
                program = examples[named["name"]] + "\n" + code
            examples[named["name"]] = program
        yield Block(document, line, kind, code, caption, program)


ALL = [block for document in DOCUMENTS for block in blocks(document)]


def skipped_reason(block: Block) -> str | None:
    """Why a block that would run is left out, or ``None``."""
    not_run = NOT_RUN.fullmatch(block.caption)
    if not_run:
        return not_run["reason"]
    if block.kind in {"bash", "console"} and INSTALLS.search(block.code):
        return "installs from a package index"
    return None


def cases() -> list[object]:
    return [
        pytest.param(block, id=block.where.replace("/", "-"))
        for block in ALL
        if block.kind in RUN and skipped_reason(block) is None
    ]


def test_every_block_says_what_it_is_and_most_run() -> None:
    unnamed = [block.where for block in ALL if block.kind not in RUN | SHOWN]
    assert not unnamed, f"fences with no kind, or one this test does not know: {unnamed}"
    fences = sum(len(re.findall(r"^[ \t]*```\w", d.read_text("utf-8"), re.M)) for d in DOCUMENTS)
    assert len(ALL) == fences  # every opening fence was read as a block
    assert len(cases()) >= 40
    not_run = [b for b in ALL if b.kind in RUN and NOT_RUN.fullmatch(b.caption)]
    assert len(not_run) <= 10, [(b.where, skipped_reason(b)) for b in not_run]


def test_the_readme_blocks_run_as_files() -> None:
    """A README block is pasted into a file and run: no top-level ``await``, no ``url``
    supplied by the test (the address is the one the serve command shown listens on)."""
    readme = [block for block in ALL if block.document.name == "README.md"]
    python = [block for block in readme if block.kind == "python"]
    assert python
    for block in python:
        compile(block.program, block.where, "exec", dont_inherit=True)  # no top-level await
        assert not AGAINST.fullmatch(block.caption), f"{block.where}: a url it does not define"


@pytest.mark.parametrize("block", cases())
def test_the_example_runs_as_written(block: Block, tmp_path: Path) -> None:
    done = _python(block, tmp_path) if block.kind == "python" else _commands(block, tmp_path)
    if block.kind == "console":  # the output says how each command ended
        assert _printed(done.stdout) == _shown(block.code), f"{block.where} printed otherwise"
    else:
        assert done.returncode == 0, f"{block.where} exited {done.returncode}:\n{done.stdout}"


# -- Python ---------------------------------------------------------------------------------


def _python(block: Block, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    named = NAMED.fullmatch(block.caption)
    name = named["name"] if named else "example.py"
    script = tmp_path / name
    if name.startswith("test_"):  # from the root, under a configuration of its own
        script.write_text(block.code, encoding="utf-8")
        (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        config = ["-c", str(tmp_path / "pytest.ini"), "-p", "no:cacheprovider"]
        return _run([sys.executable, "-m", "pytest", "-q", *config, str(script)], cwd=ROOT)
    serving = SERVING.fullmatch(block.caption)
    if serving:
        script.write_text(block.program, encoding="utf-8")
        return _in_namespace(
            # python's own status, any failure (check's 1 is tolerated in bash blocks only)
            [f"{serving['command']} &", f"python {shlex.quote(str(script))} || exit $?"],
            tmp_path,
        )
    against = AGAINST.fullmatch(block.caption)
    if against is None:
        return _run(_interpreter(block.program, script), cwd=ROOT)
    serve = subprocess.Popen(
        [_script("agui-pipeline"), "serve", *shlex.split(against["args"]), "--port", "0"],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert serve.stderr is not None
        announced = serve.stderr.readline()
        url = re.search(r"http://\S+", announced)
        assert url, f"{block.where}: serve said {announced!r}"
        program = f"url = {url[0]!r}\n" + block.program
        return _run(_interpreter(program, script), cwd=ROOT)
    finally:
        end_process(serve)


def _interpreter(program: str, script: Path) -> list[str]:
    script.write_text(program, encoding="utf-8")
    try:
        compile(program, str(script), "exec", dont_inherit=True)
    except SyntaxError:  # ``await`` outside a function: as in ``python -m asyncio``
        return [sys.executable, "-c", ASYNCIO, str(script)]
    return [sys.executable, str(script)]


# -- commands -------------------------------------------------------------------------------

PRELUDE = """\
ip link set lo up
trap 'kill $(jobs -p) 2>/dev/null || true; wait' EXIT
listening() {  # a background server's port, polled: what a person typing waits for
    for _ in $(seq 500); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return; sleep 0.02; done
    return 1
}
"""
MARK = "::command::"


def _commands(block: Block, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    commands = _console_commands(block.code) if block.kind == "console" else _bash(block.code)
    return _in_namespace(commands, tmp_path, console=block.kind == "console")


def _in_namespace(
    commands: list[str], tmp_path: Path, *, console: bool = False
) -> subprocess.CompletedProcess[str]:
    """``commands`` in a bash script, in a network namespace where only loopback exists."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        unavailable("the command blocks run in a network namespace: needs unshare and ip")
    scripts = shlex.quote(str(Path(sys.executable).parent))  # this venv's agui-pipeline
    lines = [PRELUDE, f"cd {shlex.quote(str(ROOT))}", f'export PATH={scripts}:"$PATH"']
    for command in commands:
        lines.append(f"echo {MARK}")
        background = BACKGROUND.search(command)
        if background:  # the job is the command itself, so that the trap ends it
            lines.append(f"{{ exec {command[: background.start()]}; }} >/dev/null 2>&1 &")
            port = PORT.search(command)
            if port:
                lines.append(f"listening {port[1]} || exit 3")
        elif console:
            lines += ["{", command, "} 2>&1"]  # a trailing comment leaves the braces whole
        else:  # 1 is a verdict (check failing a stream); 2 and up, an error
            lines += [command, 'status=$?; [ "$status" -le 1 ] || exit "$status"']
    script = tmp_path / "block.sh"
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return _run(["unshare", "-rn", "bash", str(script)], cwd=ROOT)


def _bash(code: str) -> list[str]:
    return [line for line in code.splitlines() if line.strip()]


def _console_commands(code: str) -> list[str]:
    return [line[2:] for line in code.splitlines() if line.startswith("$ ")]


def _shown(code: str) -> list[list[str]]:
    """A console block's output, command by command."""
    shown: list[list[str]] = []
    for line in code.splitlines():
        if line.startswith("$ "):
            shown.append([])
        elif shown:
            shown[-1].append(line.rstrip())
    return shown


def _printed(stdout: str) -> list[list[str]]:
    pieces = stdout.split(MARK + "\n")[1:]
    return [[line.rstrip() for line in piece.splitlines()] for piece in pieces]


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``command`` to its end, in a process group of its own that is ended with it: whatever
    it left behind (a server a failed block did not stop) goes too."""
    with subprocess.Popen(
        command,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    ) as process:
        try:
            stdout, _ = process.communicate(timeout=120)
        finally:
            _end_group(process.pid)
            end_process(process)
    return subprocess.CompletedProcess(command, process.returncode, stdout)


def _end_group(group: int) -> None:
    """SIGTERM to every process of ``group``, SIGKILL to any still there 10 s later."""
    for sent in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, sent)
        except ProcessLookupError:
            return
        for _ in range(200):
            time.sleep(0.05)
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                return


def _script(name: str) -> str:
    return str(Path(sys.executable).parent / name)
