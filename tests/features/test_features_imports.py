"""SPEC §1: `features` imports nothing from `imad` (nor from `training`).

The imports are read from each module's syntax tree, so an import inside a function, under
`if TYPE_CHECKING:` or in a try block counts as well, and a comment or docstring that names
`imad` does not.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

FEATURES_DIR = Path(__file__).resolve().parents[2] / "features"
MODULES = sorted(FEATURES_DIR.rglob("*.py"))


def imported_packages(path: Path) -> set[str]:
    """The top-level packages a module imports (relative imports stay inside `features`)."""
    packages: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            packages.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            packages.add(node.module.split(".")[0])
    return packages


def test_the_features_package_has_modules_to_check():
    assert {"extractor.py", "errors.py", "response.py", "entities.py"} <= {p.name for p in MODULES}


@pytest.mark.parametrize("path", MODULES, ids=[p.name for p in MODULES])
def test_no_features_module_imports_imad_or_training(path):
    assert imported_packages(path) & {"imad", "training"} == set()


def test_the_import_reader_sees_imports_anywhere(tmp_path):
    module = tmp_path / "sample.py"
    module.write_text("'''imad in a docstring'''\n"
                      "def f():\n    from imad.errors import FeatureError\n"
                      "if False:\n    import training.fit\n"
                      "from . import names\n", encoding="utf-8")
    assert imported_packages(module) == {"imad", "training"}
