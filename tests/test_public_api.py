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


def test_version_comes_from_the_distribution_metadata():
    from importlib import metadata

    assert imad.__version__ == metadata.version("imad")


def test_available_routers_lists_the_shipped_checkpoints():
    assert imad.available_routers() == ["imad-router-v1", "imad-router-v1.1", "imad-router-v2",
                                        "imad-router-v2.1"]
    assert imad.Router.load().name == "imad-router-v2"
    assert imad.Router.load().feature_schema_version == 2
    stored = {name: imad.Router.load(name).config.threshold.tau
              for name in ("imad-router-v1", "imad-router-v1.1")}
    assert stored["imad-router-v1.1"] < stored["imad-router-v1"]


def test_score_calibrate_decide_surface():
    """Issue 21: the scorer, the calibrator fit, the two threshold rules and the policy that
    composes one with an OOD policy are public, and the decision package loads without torch."""
    assert {"Router", "fit_calibrator", "FixedThreshold", "TriggerBudget", "Policy"} <= set(imad.__all__)
    assert imad.Policy is __import__("imad.decide", fromlist=["Policy"]).Policy
    code = "import imad.decide, sys; print('torch' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "False"
