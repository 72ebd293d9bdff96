"""The official Python SDK's parse-only pass over an SSE file, as a whole process.

``python benchmarks/sdk_check.py FILE``: read the file, cut out each frame's
JSON, ``TypeAdapter(Event).validate_json`` it (ag-ui-protocol's consumer path:
parse and validate, nothing more), print the count. It imports nothing of this
project, so its start-up is the SDK's own: the peer of ``agui-pipeline check
FILE`` in ``benchmarks/bench_check.py``.
"""

import sys
from pathlib import Path


def main(path: str) -> int:
    from ag_ui.core import Event
    from pydantic import TypeAdapter

    validate = TypeAdapter(Event).validate_json
    body = Path(path).read_bytes()
    frames = body.split(b"\n\n")[:-1]
    for frame in frames:
        validate(frame.removeprefix(b"data: "))
    print(f"{len(frames)} events validated")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
