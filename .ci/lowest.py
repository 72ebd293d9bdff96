"""Print pip constraints pinning each runtime dependency of pyproject.toml to its minimum.

`pip install -c <(python .ci/lowest.py) -e .` installs the lowest versions the package
allows (.ci/run's lowest-versions job): a minimum that does not work fails the tests there
instead of at a user's. Every runtime dependency must declare one (`>=`, or `==`).
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

LOWER = re.compile(
    r"^(?P<name>[A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*[^;]*?(>=|==)\s*(?P<version>[\w.]+)"
)


def constraints(pyproject: Path) -> list[str]:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    wanted = list(project["dependencies"])
    for requirements in project.get("optional-dependencies", {}).values():
        wanted += [r for r in requirements if not r.startswith(project["name"])]
    lines = []
    for requirement in wanted:
        found = LOWER.match(requirement)
        if found is None:
            raise SystemExit(f"{requirement!r}: no minimum declared")
        marker = requirement.partition(";")[2].strip()
        pinned = f"{found['name']}=={found['version']}"
        lines.append(f"{pinned}; {marker}" if marker else pinned)
    return sorted(set(lines))


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]
    print("\n".join(constraints(root / "pyproject.toml")))
