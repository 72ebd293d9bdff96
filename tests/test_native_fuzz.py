"""Coverage-guided fuzzing of the native core (``cargo fuzz``, the slow tier; issue 36).

Each target in ``native/fuzz/fuzz_targets`` runs for :data:`FUZZ_SECONDS`, seeded from the
corpus: the conformance streams (``AGUI_SPEC_DIR``) in both delimited framings and the
recorded streams in ``examples/``, each cut into random reads with empty reads among them
(``decode``: each event's JSON alone). A target's assertions are its invariants (``framer``:
no panic, no more held than the limit, the same payloads however the stream is cut;
``decode``: the judge's decoder reads what serde_json reads, alike, less what it refuses;
``judge``: the same answer, count and runs however the stream is cut); libFuzzer stops at the
first input that breaks one and writes it, and the test fails naming it.

cargo fuzz builds with flags of the nightly compiler (the sanitizer, coverage counters);
``RUSTC_BOOTSTRAP=1`` lets the machine's stable toolchain accept them, so no nightly is
needed. The test skips (the full tier: fails) naming what is missing: cargo, or cargo-fuzz
(``.ci/run`` installs it).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from agui_pipeline.testing.workload import encode_sse, events

from tests import streams
from tests.conftest import ROOT, spec_artifacts, unavailable
from tests.cores import native_module

FUZZ_SECONDS = 60
"""How long each target runs (libFuzzer's -max_total_time), its build apart."""

FUZZ_DIR = ROOT / "native" / "fuzz"
TARGETS = sorted(path.stem for path in (FUZZ_DIR / "fuzz_targets").glob("*.rs"))


def _cargo_fuzz() -> dict[str, str]:
    """The environment cargo fuzz runs in; skips naming the tool that is missing."""
    if shutil.which("cargo") is None:
        unavailable("cargo is not on PATH: the native core's fuzz targets need a Rust toolchain")
    found = subprocess.run(["cargo", "fuzz", "--version"], capture_output=True, check=False)
    if found.returncode != 0:
        unavailable(
            "cargo-fuzz is not installed (`cargo install cargo-fuzz --locked --version 0.13.2`; "
            ".ci/run does)"
        )
    return {**os.environ, "RUSTC_BOOTSTRAP": "1"}


def _reads(data: bytes, draw: random.Random) -> bytes:
    """``data`` as the framer target's reads: each a length byte and its bytes, with an
    empty read (length 0) now and then."""
    out = bytearray()
    start = 0
    while start < len(data):
        if draw.random() < 0.1:
            out.append(0)
        size = draw.randint(1, 255)
        piece = data[start : start + size]
        out.append(len(piece))
        out += piece
        start += size
    return bytes(out)


def _streams() -> list[tuple[str, bytes, str]]:
    """The corpus as byte streams: (name, bytes, framing)."""
    found = []
    for path in sorted(spec_artifacts().corpus.glob("*.json")):
        frames = [json.dumps(event).encode() for event in json.loads(path.read_bytes())["stream"]]
        for framing in ("sse", "jsonl"):
            found.append((f"{path.stem}.{framing}", streams.join_frames(frames, framing), framing))
    for path in sorted((ROOT / "examples").glob("*.sse")):
        found.append((path.name, path.read_bytes(), "sse"))
        # The other line ends SSE allows (CR LF, CR), which the framer normalises.
        found.append((f"{path.name}.crlf", path.read_bytes().replace(b"\n", b"\r\n"), "sse"))
        found.append((f"{path.name}.cr", path.read_bytes().replace(b"\n", b"\r"), "sse"))
    return found


JUDGE_LIMITS = ("frame", "depth", "open", "text", "conversation", "items", "runs")
"""The judge target's header bytes after the framing, in order (``fuzz_targets/judge.rs``)."""

JUDGE_ROOMY = (255, 255, 255, 255, 255, 255, 255)
"""The judge target's limits in its header (after the framing byte), none of them near a
stream of the corpus: max_frame_bytes 65,026, max_depth 255, max_text_chars and
max_conversation_chars 65,025, the counts 255 (``fuzz_targets/judge.rs``)."""


JUDGE_SMALL = (range(1, 41), range(13), range(13), range(1, 41), range(1, 41), range(13), range(4))
"""Small values of the same header bytes, which a stream of the corpus may meet: a frame of
at most 1,601 bytes, up to 1,600 characters of text, up to 12 items, up to 3 runs."""


def _judge_limits(framing: int, header: bytes) -> tuple[int, ...]:
    """The limits the judge target reads from its framing byte and ``header`` (its bytes after
    the framing), in the order ``_native.Judge`` takes them: the target's rule, restated for
    the test that holds its seeds to reach a clean answer. The seeds' framing byte is 0 or 1:
    the state's limits are the defaults."""
    frame, depth, open_items, text, conversation, items, runs = header
    state = framing >> 1
    state_limits = (16 << 20, 256 << 20) if state == 0 else (state**2, state**3)
    return (frame**2 + 1, depth, open_items, text**2, conversation**2, items, runs, *state_limits)


DECODE_EDGES = {
    # Every escape (each control character, the short ones, a surrogate pair), raw non-ASCII.
    "escapes": b'["'
    + "".join(f"\\u{code:04x}" for code in range(0x20)).encode()
    + b'\\"\\\\\\/\\b\\f\\n\\r\\t\\u007f\\ud83d\\ude00\xc3\xa9"]',
    # The integers at 64 bits' edges, floats up to the decoder's bound; and past them.
    "numbers": b"[0,-1,9223372036854775807,-9223372036854775808,9223372036854775808,"
    b"18446744073709551615,0.5,-9.2233720368547748e18,1.7976931348623157e308,5e-324,1E+2]",
    "refused numbers": b"[18446744073709551616,-9223372036854775809,1e19,-0,-0.0]",
    # An object past the size where the decoder looks for a repeated name by a set.
    "wide": b'{"a":0,"b":1,"c":2,"d":3,"e":4,"f":5,"g":6,"h":7,"i":8,"j":{"k":[null,true,false]}}',
}
"""Seeds for the decoder's own rules, which the corpus frames seldom reach: libFuzzer rarely
writes a ``\\u001f`` escape or a tenth member of one object by chance."""


def _workload() -> dict[str, bytes]:
    """The benchmark workload's first 300 events as SSE; and without its state events, which
    the judge leaves to the pipeline so far, the same run: a stream it judges clean."""
    workload = events(300)
    stateless = [event for event in workload if not event["type"].startswith("STATE_")]
    return {"workload": encode_sse(workload), "workload.stateless": encode_sse(stateless)}


def _seeds(target: str) -> dict[str, bytes]:
    """Each target's seed inputs, from the corpus, in the target's input format."""
    draw = random.Random(36)
    if target == "framer":
        # The header: the framing (even: SSE, odd: JSON lines), then the limit's root.
        return {
            f"{name}.{limit}": bytes([framing == "jsonl", limit]) + _reads(data, draw)
            for name, data, framing in _streams()
            for limit in (255, draw.randint(1, 40))
        }
    if target == "decode":
        # Each event's JSON, as the standard library writes it (orjson cannot write integers
        # past 64 bits, which the corpus holds).
        frames = {
            json.dumps(event).encode()
            for path in spec_artifacts().corpus.glob("*.json")
            for event in json.loads(path.read_bytes())["stream"]
        }
        seeds = {f"frame.{number}": frame for number, frame in enumerate(sorted(frames))}
        return {**seeds, **DECODE_EDGES}
    if target == "judge":
        # The header: the framing, then the limits: roomy (JUDGE_ROOMY), all small, and roomy
        # but one, for each limit (a byte of the header is seldom what libFuzzer changes in an
        # input of kilobytes, and the first small limit a stream meets hides the others).
        inputs = [*_streams(), *((name, data, "sse") for name, data in _workload().items())]
        seeds = {}
        for name, data, framing in inputs:
            small = [draw.choice(values) for values in JUDGE_SMALL]
            headers = {"roomy": JUDGE_ROOMY, "small": small}
            for at, limit in enumerate(JUDGE_LIMITS):
                headers[f"tight-{limit}"] = [*JUDGE_ROOMY[:at], small[at], *JUDGE_ROOMY[at + 1 :]]
            for label, limits in headers.items():
                header = bytes([framing == "jsonl", *limits])
                seeds[f"{name}.{label}"] = header + _reads(data, draw)
        return seeds
    raise AssertionError(f"no seeds for the fuzz target {target!r}: add them here")


def _target_env(target: str, directory: Path) -> dict[str, str]:
    """What a target reads besides its input: the judge, enforce's plan and the protocol
    versions compat is quiet about, in a file (``fuzz_targets/judge.rs``), each row of the
    plan a JSON array."""
    if target != "judge":
        return {}
    from agui_pipeline._engine.judging import _quiet_versions
    from agui_pipeline.stages._checks import native_plan

    rows, kinds = native_plan()
    plan = directory / "judge-plan.json"
    plan.write_text(
        json.dumps({"rows": rows, "events": kinds, "quiet_versions": _quiet_versions()})
    )
    return {"AGUI_JUDGE_PLAN": str(plan)}


@pytest.mark.spec
def test_every_target_has_seeds_from_the_corpus() -> None:
    assert TARGETS, "no fuzz target in native/fuzz/fuzz_targets"
    for target in TARGETS:
        assert len(_seeds(target)) > 50, target


def test_the_judge_seeds_reach_a_clean_answer() -> None:
    """The judge target compares counts and runs only where both answers are clean: the
    stateless workload, under the roomy limits, must be one (else the comparison is vacuous).
    Judged here by the extension with the plan and versions the target's file holds and the
    limits its header gives, in the seed's reads."""
    from agui_pipeline._engine.judging import _quiet_versions
    from agui_pipeline.stages._checks import native_checks

    native = native_module()
    limits = _judge_limits(0, bytes(JUDGE_ROOMY))
    judge = native.Judge("sse", native_checks(native), limits, _quiet_versions())
    data = _workload()["workload.stateless"]
    for start in range(0, len(data), 200):
        judge.feed(data[start : start + 200])
    assert judge.finish(), judge.unsure
    assert judge.read == data.count(b"data: ") and len(judge.take_runs()) == 2


@pytest.mark.slow
@pytest.mark.spec
@pytest.mark.parametrize("target", TARGETS)
def test_cargo_fuzz_finds_nothing(target: str, tmp_path: Path) -> None:
    env = {**_cargo_fuzz(), **_target_env(target, tmp_path)}
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for name, data in _seeds(target).items():
        (seeds / name).write_bytes(data)
    built = subprocess.run(
        ["cargo", "fuzz", "build", target],
        cwd=FUZZ_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    corpus = tmp_path / "corpus"  # what the run finds goes here, not into the repository
    corpus.mkdir()
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    done = subprocess.run(
        [
            *("cargo", "fuzz", "run", target, str(corpus), str(seeds), "--"),
            f"-max_total_time={FUZZ_SECONDS}",
            "-rss_limit_mb=2048",
            "-timeout=10",
            f"-artifact_prefix={artifacts}/",
        ],
        cwd=FUZZ_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=FUZZ_SECONDS + 600,
        check=False,
    )
    found = sorted(path.name for path in artifacts.iterdir())
    panic = done.stderr[done.stderr.find("panicked") :][:1500]  # the broken invariant
    assert done.returncode == 0 and not found, (found, panic or done.stderr[-3000:])
