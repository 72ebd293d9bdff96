"""Coverage-guided fuzzing of the native core (``cargo fuzz``, the slow tier; issue 36).

Each target in ``native/fuzz/fuzz_targets`` runs for :data:`FUZZ_SECONDS`, seeded from the
corpus: the conformance streams (``AGUI_SPEC_DIR``) in both delimited framings and the
recorded streams in ``examples/``, each cut into random reads with empty reads among them.
A target's assertions are its invariants (``framer``: no panic, no more held than the limit,
the same payloads however the stream is cut); libFuzzer stops at the first input that breaks
one and writes it, and the test fails naming it.

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

from tests import streams
from tests.conftest import ROOT, spec_artifacts, unavailable

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
    raise AssertionError(f"no seeds for the fuzz target {target!r}: add them here")


@pytest.mark.spec
def test_every_target_has_seeds_from_the_corpus() -> None:
    assert TARGETS, "no fuzz target in native/fuzz/fuzz_targets"
    for target in TARGETS:
        assert len(_seeds(target)) > 50, target


@pytest.mark.slow
@pytest.mark.spec
@pytest.mark.parametrize("target", TARGETS)
def test_cargo_fuzz_finds_nothing(target: str, tmp_path: Path) -> None:
    env = _cargo_fuzz()
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
