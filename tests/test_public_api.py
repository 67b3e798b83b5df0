"""The names `import imad` promises resolve to the real objects, and importing loads no model."""

from __future__ import annotations

import subprocess
import sys

import pytest

import imad


@pytest.mark.parametrize("name", sorted(set(imad.__all__) - {"__version__"}))
def test_every_public_name_resolves(name):
    assert getattr(imad, name).__name__ == name


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        imad.Nope  # noqa: B018


def test_import_loads_no_heavy_module():
    heavy = "('torch', 'spacy', 'llama_cpp', 'httpx')"
    code = f"import imad, sys; print(sorted(m for m in {heavy} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"
