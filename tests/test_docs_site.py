"""The documentation site and the release: generated reference pages, one version.

The pages docs/hooks/reference.py writes are checked here without MkDocs; the site
itself is built (``mkdocs build --strict``, the ``docs`` extra) by the slow test, which
also checks that the API page documents every name ``agui_pipeline`` exports.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import agui_pipeline
import pytest
from agui_pipeline import catalog
from agui_pipeline.cli import build_parser

from docs.hooks import reference
from tests.conftest import ROOT, unavailable


def test_the_cli_page_shows_every_command_and_every_option(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    page = reference.cli_page()
    monkeypatch.setenv("COLUMNS", "40")  # argparse wraps to the terminal's width, unless told
    assert reference.cli_page() == page
    commands = [name for name, _, _ in reference._commands(build_parser())]
    assert commands == ["check", "serve", "proxy", "explain", "conformance", "bench"]
    for name, _, command in reference._commands(build_parser()):
        section = page.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
        assert f"usage: agui-pipeline {name}" in section
        for action in command._actions:
            if action.help == argparse.SUPPRESS:  # internal (bench's counted child)
                continue
            for option in action.option_strings:
                assert option in section, f"{name} {option}"


def test_the_reference_pages_list_every_code() -> None:
    diagnostics, rejections = reference.diagnostics_page(), reference.rejections_page()
    for code in catalog.ALL.values():
        assert f"**`{code.id}`**" in diagnostics
        assert (f"| `{code.id}` |" in rejections) == (code.severity is catalog.Severity.ERROR)


def test_the_version_lives_in_pyproject_and_the_changelog_names_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "version" not in project.get("dynamic", [])
    assert not hasattr(agui_pipeline, "__version__")  # no second place to forget
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", changelog, re.M)
    assert "## [Unreleased]" in changelog
    assert releases and releases[0] == project["version"]  # the newest entry is this version
    declared = {c.rpartition(" :: ")[2] for c in project["classifiers"] if "Python :: 3." in c}
    assert declared == {"3.11", "3.12", "3.13"}
    assert project["requires-python"] == ">=3.11"


def test_every_page_of_the_docs_folder_is_in_the_nav() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r"^ *- [^:\n]+: (\S+\.md)$", config, re.M))
    pages = {
        path.relative_to(ROOT / "docs").as_posix()
        for path in (ROOT / "docs").rglob("*.md")
        if "hooks" not in path.parts
    }
    assert pages == listed - set(reference.GENERATED)
    assert set(reference.GENERATED) <= listed


@pytest.mark.slow  # a whole site build, about 10 s
def test_the_site_builds_strict_and_documents_every_exported_name(tmp_path: Path) -> None:
    mkdocs = Path(sys.executable).parent / "mkdocs"
    if not mkdocs.exists():
        unavailable("building the site needs the docs group: pip install -e . --group docs")
    built = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    api = (tmp_path / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    documented = set(re.findall(r'id="agui_pipeline\.(\w+)[".]', api))  # a module: its members
    assert set(agui_pipeline.__all__) <= documented
    # Markdown throughout (docs/hooks/docstrings.py): no reStructuredText role left as written,
    # no special member, no text of the standard library's standing in for a docstring.
    assert not re.findall(r":(?:class|func|meth|mod|data|attr|exc|obj|const):`", api)
    assert not re.findall(r'id="agui_pipeline[\w.]*\.__\w+__"', api)
    assert "Represent a PEP 604 union type" not in api
    import griffe  # the docs group's, as mkdocstrings reads the package

    package = griffe.load("agui_pipeline", resolve_aliases=True, resolve_external=False)
    undocumented = [name for name in agui_pipeline.__all__ if not package[name].docstring]
    assert not undocumented, undocumented
    cli = (tmp_path / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "usage: agui-pipeline check" in cli
    rejections = (tmp_path / "reference" / "rejections" / "index.html").read_text("utf-8")
    assert "verify.after-close" in rejections
