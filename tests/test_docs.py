"""The documentation site builds strictly, and every code block in it runs or says why not (issue 35).

Every fenced Python or shell block under docs/ is preceded by one marker comment:
- `<!-- run -->`: this test runs it for real (shell lines with the venv's scripts on PATH, Python
  in a fresh interpreter); a ```text block right after it is the output it must print;
- `<!-- recipe: NAME -->`: tests/test_readme_recipes.py runs it (the test checks that it does);
- `<!-- not run: REASON -->`: it cannot run here, and REASON says why.
A block with no marker fails the test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RUNNABLE = ("python", "bash", "sh", "shell", "console")
BLOCK = re.compile(r"(?:^(<!--[^\n]*-->)\n)?^```(\w+)\n(.*?)^```\n"  # marker, language, code
                   r"(?:\n?(?:prints\n\n)?^```text\n(.*?)^```\n)?",      # the output it prints
                   re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    page: str
    language: str
    marker: str
    code: str
    output: str | None

    def __str__(self) -> str:
        return f"{self.page}: ```{self.language} {self.code.splitlines()[0][:60]!r}"


def blocks() -> list[Block]:
    """Every fenced Python or shell block of every docs page, with the comment right above it."""
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        for match in BLOCK.finditer(page.read_text(encoding="utf-8")):
            marker, language, code, output = match.groups()
            if language in RUNNABLE:
                found.append(Block(str(page.relative_to(ROOT)), language, marker or "", code, output))
    return found


def test_every_block_is_run_or_says_why_not():
    recipes_test = (ROOT / "tests" / "test_readme_recipes.py").read_text(encoding="utf-8")
    run_by_recipes = set(re.findall(r'recipe\("(\w+)"\)', recipes_test))
    found = blocks()
    assert len(found) >= 15, "the block pattern stopped matching the pages"
    problems = []
    for block in found:
        if block.marker == "<!-- run -->":
            continue
        recipe = re.fullmatch(r"<!-- recipe: (\w+) -->", block.marker)
        reason = re.fullmatch(r"<!-- not run: (.{10,}) -->", block.marker)
        if recipe and recipe.group(1) not in run_by_recipes:
            problems.append(f"{block}: recipe {recipe.group(1)!r} is run by no test")
        elif not (recipe or reason):
            problems.append(f"{block}: neither run nor marked '<!-- not run: REASON -->'")
    assert problems == []


RUN = [block for block in blocks() if block.marker == "<!-- run -->"]


@pytest.mark.parametrize("block", RUN, ids=str)
def test_runnable_block_runs(block, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    if block.language == "python":
        commands = [[sys.executable, "-c", block.code]]
    else:
        commands = [["bash", "-euo", "pipefail", "-c", line]
                    for line in block.code.splitlines() if line.strip()]
    printed = ""
    for command in commands:
        result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, f"{block}\n{command[-1]}\n{result.stderr[-2000:]}"
        assert "Traceback" not in result.stderr
        printed += result.stdout
    if block.output is not None:
        assert printed == block.output
    elif block.language != "python":
        assert printed.startswith("usage: ")  # the --help blocks print argparse's help


@pytest.mark.slow
def test_mkdocs_build_strict(tmp_path):
    """No broken link, anchor, page or mkdocstrings reference: --strict turns each into a failure."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                             str(tmp_path / "site")], cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-4000:]
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    for command in ("imad ask", "imad serve", "imad calibrate", "python -m training.fit"):
        assert re.search(rf'<h2 id="[^"]*">{command}<', cli), command
    schema = (tmp_path / "site" / "concepts" / "decide" / "index.html").read_text(encoding="utf-8")
    assert "<code>tau_source</code>" in schema and "<code>ood_policy</code>" in schema


def test_generated_parts_follow_the_code():
    """The generated CLI reference holds every sub-command's help; the schema table every field."""
    sys.path.insert(0, str(DOCS / "hooks"))
    try:
        import generate
    finally:
        sys.path.remove(str(DOCS / "hooks"))
    from imad.cli.main import _available_commands
    from imad.decide.schema import FIELDS

    table = generate.expand("<!-- generate: decision-schema -->")
    assert [row.split("|")[1].strip(" `") for row in table.splitlines()[2:2 + len(FIELDS)]] == \
        [field.name for field in FIELDS]
    with pytest.raises(KeyError, match="unknown generated part 'nope'"):
        generate.expand("<!-- generate: nope -->")
    cli = generate.cli_reference()
    for name in _available_commands():
        assert f"## imad {name}\n\n```text\nusage: imad {name} " in cli
