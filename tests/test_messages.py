"""A code owns its message: every site words a finding with its code's template.

The template is the message's exact shape (``explain CODE`` prints it), so a finding of a
code reads alike wherever it is raised, and a core that raises by id renders the same text
through :func:`agui_pipeline.catalog.render`.
"""

from __future__ import annotations

import ast
import string
from pathlib import Path

import pytest
from agui_pipeline import catalog
from agui_pipeline.catalog import Message
from agui_pipeline.cli.explain import _explain

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*ROOT.joinpath("stages").glob("*.py"), *ROOT.joinpath("pipeline").rglob("*.py")])
CODE_NAMES = {name for name in dir(catalog) if isinstance(getattr(catalog, name), catalog.Code)}
_WORDED = {
    "report",
    "reject",
    "_report",
    "_reject",
    "StreamRejected",
    "StreamTruncated",
    "InputRejected",
}


def _fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def _sample(template: str) -> dict[str, object]:
    """A value per field: a number where the field's format spec wants one."""
    sample: dict[str, object] = {}
    for _, name, spec, _ in string.Formatter().parse(template):
        if name:
            sample[name] = 1.5 if spec and spec[-1] in "efg%" else f"<{name}>"
    return sample


def _shapes() -> list[tuple[str, str, str]]:
    return [
        (code.id, form, shape)
        for code in catalog.ALL.values()
        for form, shape in [("", code.message), *code.forms.items()]
        if shape
    ]


def test_every_code_has_a_template() -> None:
    """Every code owns its message's shape."""
    missing = {code.id for code in catalog.ALL.values() if not code.message}
    assert missing == set()


def test_every_code_says_what_to_do_in_its_own_words() -> None:
    """A code owns its advice too: none is left blank to fall back on its section's lead,
    and none repeats another code's, so `explain`, SARIF and the reports say what this
    finding needs changed."""
    seen: dict[str, str] = {}
    wrong = []
    for code in catalog.ALL.values():
        if not code.advice or code.advice == catalog.ADVICE.get(code.id.partition(".")[0]):
            wrong.append(f"{code.id}: no advice of its own")
        elif code.advice in seen:
            wrong.append(f"{code.id}: the advice of {seen[code.advice]}")
        seen.setdefault(code.advice, code.id)
        assert code.what_to_do == code.advice
    assert wrong == []


@pytest.mark.parametrize(("code_id", "form", "shape"), _shapes())
def test_rendering_fills_every_field(code_id: str, form: str, shape: str) -> None:
    fields = _sample(shape)
    text = catalog.render(code_id, fields, form)
    for value in fields.values():
        assert str(value) in text or repr(value) in text
    code = catalog.ALL[code_id]
    assert code(form, **fields) == Message(code, text)


@pytest.mark.parametrize(("code_id", "form", "shape"), _shapes())
def test_a_missing_field_is_an_error_not_a_blank(code_id: str, form: str, shape: str) -> None:
    if not _fields(shape):
        return
    with pytest.raises(KeyError):
        catalog.render(code_id, {}, form)


def test_no_site_words_a_known_code_by_hand() -> None:
    """A report or rejection naming a catalog code passes the code called with its fields,
    never the code beside a string of the site's own."""
    found = []
    for path in SOURCES:
        if "catalog" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or len(node.args) < 2:
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0]
            if name in _WORDED and isinstance(first, ast.Name) and first.id in CODE_NAMES:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {first.id}")
    assert found == []


def test_explain_shows_the_template(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse
    import io

    out = io.StringIO()
    args = argparse.Namespace(markdown=False, rejections=False, codes=["verify.after-close"])
    assert _explain(args, out) == 0
    code = catalog.ALL["verify.after-close"]
    assert f"message: {code.message}\n" in out.getvalue()
    assert f"message (after-error): {code.forms['after-error']}\n" in out.getvalue()


def test_a_str_message_is_still_taken() -> None:
    """User stages written before codes owned their messages keep working."""
    from agui_pipeline.errors import StreamRejected

    rejected = StreamRejected(catalog.VERIFY_STEP, "words of my own")
    assert rejected.detail == "words of my own"
    assert (
        StreamRejected(catalog.VERIFY_TRUNCATED("no-run")).detail
        == (catalog.VERIFY_TRUNCATED.forms["no-run"])
    )
