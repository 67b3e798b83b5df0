"""The notebooks run top to bottom (nbclient, the venv's "python3" kernel) and show their plots."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "notebooks"))
from execute import NAMES, execute  # noqa: E402

pytestmark = pytest.mark.slow


def outputs(notebook: dict) -> list[dict]:
    return [output for cell in notebook["cells"] if cell["cell_type"] == "code"
            for output in cell.get("outputs", [])]


def test_kernel_is_this_interpreter():
    import nbformat
    from nbclient import NotebookClient

    cell = nbformat.v4.new_code_cell("import sys; print(sys.executable)")
    notebook = nbformat.v4.new_notebook(cells=[cell])
    NotebookClient(notebook, timeout=60, kernel_name="python3").execute()
    printed = notebook.cells[0].outputs[0]["text"].strip()
    assert Path(printed).resolve() == Path(sys.executable).resolve()  # the venv's python


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_and_shows_plots(name, tmp_path):
    execute(REPO_ROOT / "notebooks" / name, tmp_path / name)
    notebook = json.loads((tmp_path / name).read_text())
    produced = outputs(notebook)
    assert not [o for o in produced if o["output_type"] == "error"]
    images = [o for o in produced if "image/png" in o.get("data", {})]
    assert len(images) >= 2
    text = "".join("".join(o.get("text", "")) for o in produced)
    assert "Corpus: the shipped corpus " in text  # the notebooks never fall back to a test corpus


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebooks_are_executed(name):
    notebook = json.loads((REPO_ROOT / "notebooks" / name).read_text())
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert all(cell.get("execution_count") for cell in code)
    assert any("image/png" in o.get("data", {}) for o in outputs(notebook))
    assert not [o for o in outputs(notebook) if o["output_type"] == "error"]
