"""One import name: the distribution installs ``agui_pipeline`` and no generic module.

django-pipeline ships a top-level ``pipeline``: the two must install side by side, and
removing one must not break the other. The wheel test needs pip to reach the package
index; without it the test skips, saying so (in the full tier it fails).
"""

from __future__ import annotations

import pkgutil
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import agui_pipeline
import pytest

from tests.conftest import ROOT, unavailable

NOT_SOURCE = {".git", ".venv", "build", "__pycache__", ".hypothesis", ".peers", "results", "target"}
"""What a working copy holds besides the source (caches, installs, benchmark output, the
native core's cargo build)."""


def pip(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """This interpreter's pip, with a bounded wait when the network is missing."""
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


def python(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``venv``'s interpreter, isolated (no working directory or PYTHONPATH on its path)."""
    return subprocess.run(
        [str(venv / "bin" / "python"), "-I", *args],
        cwd=venv,
        capture_output=True,
        text=True,
        timeout=120,
    )


def built_wheel(tmp_path: Path) -> Path:
    """``pip wheel`` of a copy of the working tree (the build writes into its source)."""
    source = tmp_path / "source"
    shutil.copytree(
        ROOT,
        source,
        ignore=lambda _, names: [
            n for n in names if n in NOT_SOURCE or n.endswith((".egg-info", "_cache"))
        ],
    )
    built = pip("wheel", str(source), "--no-deps", "-q", "-w", str(tmp_path / "dist"), cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    return wheel


@pytest.mark.slow  # a wheel build and a fresh venv
def test_the_wheel_installs_beside_django_pipeline_and_survives_its_removal(
    tmp_path: Path,
) -> None:
    fetched = pip(
        "download", "django-pipeline", "--no-deps", "-q", "-d", str(tmp_path / "dl"),
        "--timeout", "15", "--retries", "1",
        cwd=tmp_path,
    )  # fmt: skip
    if fetched.returncode != 0:
        last = (fetched.stderr.strip().splitlines() or ["no output"])[-1]
        unavailable(f"needs pip to reach PyPI (django-pipeline could not be fetched: {last})")

    wheel = built_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names if ".dist-info/" not in name} == {"agui_pipeline"}
    for folder, package in (
        (ROOT / "pipeline", "agui_pipeline"),
        (ROOT / "stages", "agui_pipeline/stages"),
    ):
        modules = {f"{package}/{path.name}" for path in folder.glob("*.py")}
        assert modules <= set(names), modules - set(names)
        assert f"{package}/py.typed" in names

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    target = ["--python", str(venv / "bin" / "python")]
    (django_pipeline,) = (tmp_path / "dl").glob("*.whl")
    installed = pip(*target, "install", "-q", str(wheel), str(django_pipeline), cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr

    both = python(
        venv,
        "-c",
        "import importlib.metadata as m, agui_pipeline, pipeline;"
        "from agui_pipeline import Pipeline;"
        "assert pipeline.__version__ == m.version('django-pipeline'), pipeline.__file__;"
        "assert Pipeline().stage_names",
    )
    assert both.returncode == 0, both.stderr

    removed = pip(*target, "uninstall", "-y", "-q", "django-pipeline", cwd=tmp_path)
    assert removed.returncode == 0, removed.stderr
    alone = python(
        venv,
        "-c",
        "import importlib.util as u, agui_pipeline.stages.parse;"
        "from agui_pipeline import Pipeline;"
        "assert u.find_spec('pipeline') is None and u.find_spec('stages') is None;"
        "assert Pipeline().stage_names",
    )
    assert alone.returncode == 0, alone.stderr
    command = python(venv, "-m", "agui_pipeline", "--help")
    assert command.returncode == 0, command.stderr
    assert "agui-pipeline" in command.stdout


def test_no_module_of_the_package_imports_a_top_level_pipeline_or_stages(
    tmp_path: Path,
) -> None:
    """Every module imported in a fresh interpreter, away from the repository root."""
    names = [
        module.name
        for module in pkgutil.walk_packages(agui_pipeline.__path__, "agui_pipeline.")
        if not module.name.endswith("__main__")
    ]
    assert "agui_pipeline.stages.verify" in names
    script = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] in ('pipeline', 'stages')))\n"
    )
    imported = subprocess.run(
        [sys.executable, "-I", "-c", script], cwd=tmp_path, capture_output=True, text=True
    )
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.strip() == "[]"


def test_the_published_metadata_holds_what_users_need_and_no_development_pins() -> None:
    """Users see the runtime extras only; the development dependencies are PEP 735 groups,
    which are not published. The sdist holds no tests (MANIFEST.in): the suite needs the
    repository and the spec artifacts beside it."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    project = pyproject["project"]
    extras = set(project["optional-dependencies"])
    assert extras == {"http", "aiohttp", "serve", "otel", "metrics", "proto", "dask"}
    for requirements in project["optional-dependencies"].values():
        assert not [r for r in requirements if "==" in r], requirements  # ranges for users
    assert {"test", "docs", "release", "interop", "bench", "lowest"} <= set(
        pyproject["dependency-groups"]
    )
    assert project["authors"] and project["urls"]
    manifest = (ROOT / "MANIFEST.in").read_text(encoding="utf-8").splitlines()
    assert "prune tests" in manifest


def test_the_readme_test_command_is_what_ci_runs_and_installs_the_test_group() -> None:
    """The README's second block is the test command; .ci/run runs it verbatim. A fresh venv's
    pip may predate --group (25.1): the command brings a pip that reads groups first."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)\n```", readme, re.S)
    command = blocks[1]
    assert "\n" not in command
    assert "pip install pip==" in command.split("--group test")[0]
    assert "pip install -e . --group test" in command
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert command in ci
    # set -e lets a failure short of an && list's last command pass: the next line stops it.
    assert ci[ci.index(command) + 1].startswith('[ "$?" -eq 0 ] || fail ')


def test_the_release_workflow_builds_for_each_platform() -> None:
    """release.yml's wheels: an x86_64 and an arm64 macOS runner with a deployment target
    set, and the test group installable on every platform the suite runs on (atheris has
    Linux wheels only)."""
    workflow = (ROOT / ".github" / "workflows" / "release.yml").read_text()
    wheels = re.search(r"\n  wheels:\n(.*?)\n  test:\n", workflow, re.S)
    assert wheels, "release.yml has no wheels job before its test job"
    runners = re.search(r"os: \[(.*?)\]", wheels.group(1))
    assert runners
    assert {"ubuntu-latest", "macos-latest", "macos-15-intel", "windows-latest"} == {
        name.strip() for name in runners.group(1).split(",")
    }
    assert "CIBW_ENVIRONMENT_MACOS: MACOSX_DEPLOYMENT_TARGET=10.13" in wheels.group(1)
    test_group = tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]["test"]
    atheris = [entry for entry in test_group if str(entry).startswith("atheris")]
    assert atheris and all("sys_platform == 'linux'" in str(entry) for entry in atheris)
