"""Using a part of imad without its extra names the exact install command (issue 13)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from imad.errors import MissingDependencyError
from imad.extras import require_extra

# Each case hides the extra's modules (a None entry in sys.modules makes their import fail) and
# uses the part that needs them, in a fresh interpreter.
_CASES = {
    "local": "from imad.llm.local_gguf import LocalGGUFChat; from imad.llm.types import ChatRequest, "
             "Message; LocalGGUFChat().chat(ChatRequest(messages=(Message('user', 'hi'),)))",
    "train": "import training.fit",
    "serve": "from imad.serve import create_app",
}
_HIDDEN = {"local": ("llama_cpp",), "train": ("lightning",), "serve": ("fastapi",)}

_RUN = """
import sys
for module in {hidden!r}:
    sys.modules[module] = None
from imad.errors import MissingDependencyError
try:
    {use}
except MissingDependencyError as error:
    print("MISSING", error.install)
"""


@pytest.mark.parametrize("extra", sorted(_CASES))
def test_missing_extra_names_its_install_command(extra):
    code = _RUN.format(hidden=_HIDDEN[extra], use=_CASES[extra])
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert f"MISSING pip install 'imad[{extra}]'" in result.stdout, result.stderr[-2000:]


def test_require_extra_names_the_missing_module(monkeypatch):
    monkeypatch.setitem(sys.modules, "lightning", None)
    with pytest.raises(MissingDependencyError, match=r"'lightning'.*pip install 'imad\[train\]'"):
        require_extra("train", "training")
    require_extra("train", "training", modules=("numpy",))  # present: no error


def test_python_m_training_without_the_extra_is_one_error_line_and_exit_3():
    hide_and_run = ("import runpy, sys; sys.modules['lightning'] = None; sys.argv = ['-m', '--help']; "
                    "runpy.run_module('training.fit', run_name='__main__')")
    result = subprocess.run([sys.executable, "-c", hide_and_run], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 3, result.stderr
    assert result.stderr.startswith("error: ") and "pip install 'imad[train]'" in result.stderr
    assert "Traceback" not in result.stderr
