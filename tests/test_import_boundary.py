"""Imports run one way (SPEC §1): nothing the runtime loads pulls in `training` or its stack.

Two checks: a real run in a fresh interpreter (import imad, load the default router, decide on
a recorded self-critique, import the modules behind `imad ask`, `imad critique`, `imad serve`
and `imad calibrate`) records every module loaded; and a scan of the source finds no import
of `training` under `imad/` or `features/`.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = ("training", "lightning", "datasets")
NOT_IN_CORE = (*FORBIDDEN, "sklearn")
"""Not imported by runtime source. (scikit-learn may still load at run time: nltk, which textstat
imports, uses it when it happens to be installed.)"""
RECORDED = ROOT / "corpus" / "smollm2-135m-instruct-q4_1" / "eval" / "medqa.jsonl"

_RUN = """
import importlib, json, sys
import imad
from imad.critique.schema import CritiqueResponse
from imad.decide import checkpoint_policy

record = json.loads(open(sys.argv[1], encoding="utf-8").readline())
router = imad.Router.load()
score = router.score(record["question"]["text"], CritiqueResponse.from_dict(record["parsed"]))
decision = checkpoint_policy(router.config).decide(score)
for module in ("imad.cli.main", "imad.cli.ask", "imad.cli.critique", "imad.cli.serve",
               "imad.cli.calibrate", "imad.router.threshold", "imad.router.calibration_set",
               "imad.corpus_records", "imad.router.training_record",
               "imad.serve.app", "imad.serve.factory", "imad.pipeline", "imad.debate"):
    importlib.import_module(module)
print(json.dumps({"p": decision.p, "modules": sorted(sys.modules)}))
"""


def test_runtime_loads_no_training_module():
    result = subprocess.run([sys.executable, "-c", _RUN, str(RECORDED)], capture_output=True,
                            text=True, check=True, cwd=ROOT)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert 0.0 <= report["p"] <= 1.0
    loaded = [m for m in report["modules"] if m.split(".")[0] in FORBIDDEN]
    assert loaded == []
    assert "imad.serve.app" in report["modules"] and "features" in report["modules"]


def imported_packages(path: Path) -> set[str]:
    """Top-level names of every import in a source file, including imports inside functions."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_no_runtime_source_imports_training():
    offenders = {
        str(path.relative_to(ROOT)): sorted(imported_packages(path) & set(NOT_IN_CORE))
        for package in ("imad", "features")
        for path in sorted((ROOT / package).rglob("*.py"))
    }
    assert {path: names for path, names in offenders.items() if names} == {}


def test_the_scan_sees_imports_inside_functions(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from training.fit import fit\n    import lightning as L\n")
    assert imported_packages(source) == {"training", "lightning"}


def printed_by(code: str) -> str:
    """What a fresh interpreter running `code` in the checkout prints (stripped)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=ROOT).stdout.strip()


def test_deciding_imports_no_torch():
    """A policy, a trigger budget and the decision schema load without torch, and the
    decision package imports nothing of the router (only its config, for type checking)."""
    code = ("import sys, imad; imad.Policy(imad.FixedThreshold(0.6)); imad.TriggerBudget(0.2); "
            "import imad.decide.schema, imad.decide.budget_state; "
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('imad.router')))")
    assert printed_by(code) == "[]"


def test_the_decision_package_and_the_router_config_do_not_import_each_other():
    """Imports run one way: `imad.router` may import `imad.decide`, never the reverse (except
    under TYPE_CHECKING), and the router's config imports nothing from the policy side."""
    def runtime_imports(path: Path) -> set[str]:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        guarded = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(block.test) for node in ast.walk(block)}
        return {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and node.module and id(node) not in guarded}

    decide = {str(path.relative_to(ROOT)): sorted(m for m in runtime_imports(path)
                                                  if m.startswith("imad.router"))
              for path in sorted((ROOT / "imad" / "decide").glob("*.py"))}
    assert {path: names for path, names in decide.items() if names} == {}
    config = runtime_imports(ROOT / "imad" / "router" / "config.py")
    assert sorted(m for m in config if m.startswith("imad.decide")) == []


def test_certifying_and_checking_a_certificate_import_no_torch():
    """A certified τ is certified, saved, read back and checked live without the network: the
    certify package loads scipy only when it certifies, and torch never."""
    code = ("import sys; from imad.decide.certify import Certificate, live_check; "
            "live_check([0, 1, 0], 0.1, 0.05); scipy_at_import = 'scipy' in sys.modules; "
            "from imad.decide.certify import certify; "
            "c = certify([0.9] * 40, [1] * 40, alpha=0.1); Certificate.from_dict(c.to_dict()); "
            "print(scipy_at_import, sorted(m for m in sys.modules if m == 'torch' "
            "or m.startswith('imad.router')))")
    assert printed_by(code) == "False []"


def test_calibrate_help_and_the_calibrator_registry_load_no_torch():
    """`imad calibrate --help` lists the calibrator registry's methods, and neither the help nor
    `imad.router`'s torch-free names (the registry, the shipped routers' names) load torch; the
    router itself still loads it on first use. (A wide COLUMNS: argparse wraps help at the
    terminal's width, and may break "prior-shift" at its hyphen.)"""
    code = ("import contextlib, io, json, sys\n"
            "from imad.cli.main import main\n"
            "out = io.StringIO()\n"
            "with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):\n"
            "    main(['calibrate', '--help'])\n"
            "import imad.router, imad.router.calibrators\n"
            "names = imad.router.available_routers()\n"
            "before = 'torch' in sys.modules\n"
            "imad.router.Router\n"
            "print(json.dumps({'help': out.getvalue(), 'torch_before': before, "
            "'torch_after': 'torch' in sys.modules, 'names': names}))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=ROOT, env={**os.environ, "COLUMNS": "1000"})
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert (report["torch_before"], report["torch_after"]) == (False, True)
    assert "imad-router-v2" in report["names"]
    assert ("auto, temperature, platt, isotonic, base-rate, prior-shift (auto, the default"
            in " ".join(report["help"].split()))
    assert "prior-shift needs no labels" in " ".join(report["help"].split())
