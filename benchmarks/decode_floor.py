"""The least a Python consumer of an SSE file can do, as a whole process.

``python benchmarks/decode_floor.py FILE``: read the file, cut out each frame's
JSON with the same split as ``sdk_check.py``, ``orjson.loads`` it and read its
``type``, print the count. No validation, no state, nothing of this project: a
floor under every contender of ``benchmarks/bench_check.py``, which shows how
much of a whole process any per-event Python work can still win back.
"""

import sys
from pathlib import Path


def main(path: str) -> int:
    import orjson

    body = Path(path).read_bytes()
    frames = body.split(b"\n\n")[:-1]
    types = 0
    for frame in frames:
        types += bool(orjson.loads(frame.removeprefix(b"data: "))["type"])
    print(f"{len(frames)} events decoded, {types} with a type")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
