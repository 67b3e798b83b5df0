"""`imad calibrate` (run time, corpus files) and `python -m training.calibrate` (also the
router's validation split): τ for a target trigger rate or token budget, in a new checkpoint."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from imad.cli.main import main
from imad.errors import ConfigError, DatasetError
from imad.router import Router
from imad.router.checkpoint import CONFIG_FILE, WEIGHTS_FILE
from imad.router.registry import PACKAGE_ROOT, resolve_checkpoint
from imad.router.threshold import (
    new_checkpoint_path,
    next_version_path,
    rate_for_token_budget,
    tau_for_trigger_rate,
)
from training.calibrate import main as training_calibrate
from training.datamodule import load_corpus
from training.evaluation.training_rows import router_training_rows

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "corpus_small"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("calibrate")


@pytest.fixture(scope="module")
def trained(workdir) -> Path:
    """A router trained on the fixture corpus: its checkpoint records corpus files and split."""
    from training.config import FitConfig
    from training.fit import fit

    config = FitConfig(corpus=(str(FIXTURE),), epochs=2, progress_bar=False,
                       feature_cache=str(workdir / "features"),
                       output=str(workdir / "ckpt" / "imad-router-v1"), run_dir=str(workdir / "run"))
    return fit(config).checkpoint


def calibrate(*arguments: str) -> int:
    return main(["calibrate", *arguments])


@pytest.mark.parametrize(("rate", "unparsed", "tau", "escalated"), [
    (0.5, 0, 0.25, 2),     # escalate p 0.1, 0.2
    (0.6, 0, 0.25, 2),     # 0.6 · 4 = 2.4 → at most 2
    (0.24, 0, 0.05, 0),    # 0.96 → none: τ below every score
    (0.99, 0, 0.35, 3),
    (0.5, 2, 0.15, 3),     # 6 questions, 3 allowed, 2 used by unparsed answers
    (0.5, 4, 0.05, 4),
])
def test_tau_for_trigger_rate_by_hand(rate, unparsed, tau, escalated):
    choice = tau_for_trigger_rate(np.array([0.3, 0.1, 0.4, 0.2]), np.array([1, 0, 1, 0]), rate,
                                  unparsed)
    assert choice.tau == pytest.approx(tau)
    assert (choice.escalated, choice.questions) == (escalated, 4 + unparsed)
    assert choice.achieved_rate == pytest.approx(escalated / (4 + unparsed))
    assert choice.achieved_rate <= rate


def test_ties_and_extreme_scores():
    p, y = np.array([0.1, 0.2, 0.2, 0.4]), np.array([0, 1, 0, 1])
    assert tau_for_trigger_rate(p, y, 0.5).tau == pytest.approx(0.15)  # cannot split the 0.2s
    assert tau_for_trigger_rate(p, y, 0.75).tau == pytest.approx(0.3)
    assert tau_for_trigger_rate(p, y, 0.75).kept_accuracy == 1.0
    zeros = tau_for_trigger_rate(np.array([0.0, 0.0, 0.5, 1.0]), np.array([0, 0, 1, 1]), 0.1)
    assert 0.0 < zeros.tau < 1e-5 and zeros.achieved_rate == 0.5  # ties at 0: the least reachable
    ones = tau_for_trigger_rate(np.array([0.5, 1.0, 1.0]), np.array([0, 1, 1]), 0.99)
    assert ones.tau < 1.0 and ones.escalated == 1
    with pytest.raises(DatasetError, match="more than the target rate"):
        tau_for_trigger_rate(p, y, 0.5, unparsed=5)
    with pytest.raises(DatasetError, match="no parsed answers"):
        tau_for_trigger_rate(np.zeros(0), np.zeros(0), 0.5, unparsed=3)


@pytest.mark.parametrize("rate", [0.0, 1.0, 1.5, -0.1, math.nan])
def test_rate_outside_the_open_interval(rate):
    with pytest.raises(ConfigError, match=r"^target_rate \(--target-trigger-rate\): must be a finite "
                                          r"number in \(0, 1\), got "):
        tau_for_trigger_rate(np.array([0.5]), np.array([1]), rate)


def test_token_budget_arithmetic():
    assert rate_for_token_budget(1000, 500, 2000) == pytest.approx(0.25)
    with pytest.raises(ConfigError, match="strictly between 500 .never debate. and 2500"):
        rate_for_token_budget(400, 500, 2000)
    with pytest.raises(ConfigError, match="always debate"):
        rate_for_token_budget(2600, 500, 2000)
    with pytest.raises(ConfigError, match="--debate-tokens"):
        rate_for_token_budget(1000, 500, 0)


def test_next_version_path(tmp_path):
    assert next_version_path(tmp_path / "my-router-v1").name == "my-router-v1.1"
    (tmp_path / "my-router-v1.1").mkdir()
    assert next_version_path(tmp_path / "my-router-v1").name == "my-router-v1.2"
    assert next_version_path(tmp_path / "my-router-v1.1").name == "my-router-v1.2"
    assert next_version_path(tmp_path / "x-v2.3").name == "x-v2.4"
    assert next_version_path(tmp_path / "other").name == "other-v1.1"


def test_a_new_version_never_takes_a_shipped_name_nor_goes_into_the_package(tmp_path, monkeypatch):
    """`imad-router-v2` → `imad-router-v2.1` named another shipped router, and the default --out
    of a shipped router lay beside the installed checkpoint."""
    assert next_version_path(tmp_path / "imad-router-v2").name == "imad-router-v2-local.1"
    assert next_version_path(tmp_path / "imad-router-v1.1").name == "imad-router-v1.1-local.1"
    (tmp_path / "imad-router-v2-local.1").mkdir()
    assert next_version_path(tmp_path / "imad-router-v2").name == "imad-router-v2-local.2"
    assert next_version_path(tmp_path / "imad-router-v2-local.1").name == "imad-router-v2-local.2"
    monkeypatch.chdir(tmp_path)
    assert new_checkpoint_path(resolve_checkpoint("imad-router-v2"), None, False) == \
        tmp_path / "imad-router-v2-local.2"
    with pytest.raises(ConfigError, match="inside the installed imad package"):
        new_checkpoint_path(resolve_checkpoint("imad-router-v2"), PACKAGE_ROOT / "_checkpoints" / "x",
                            False)
    with pytest.raises(ConfigError, match="'imad-router-v2.1' is the name of a shipped router"):
        new_checkpoint_path(resolve_checkpoint("imad-router-v2"), tmp_path / "imad-router-v2.1", False)


def test_calibrate_on_the_validation_split(trained, workdir, capsys):
    original = {name: (trained / name).read_bytes() for name in (CONFIG_FILE, WEIGHTS_FILE)}
    assert training_calibrate(["--router", str(trained), "--target-trigger-rate", "0.25",
                               "--feature-cache", str(workdir / "features")]) == 0
    printed = capsys.readouterr().out
    new = trained.parent / "imad-router-v1-local.1"  # v1.1 is a shipped router's name
    router = Router.load(new)
    assert f"checkpoint: {new}" in printed and f"tau: {router.config.threshold.tau:.6g}" in printed
    config = json.loads((new / CONFIG_FILE).read_text())
    assert config["name"] == "imad-router-v1-local.1"
    assert config["threshold"]["tau"] == router.config.threshold.tau
    assert "target trigger rate 0.25" in router.config.threshold.method
    assert "the router's validation split" in config["threshold"]["method"]
    calibration = config["calibration"]
    assert calibration["parent"]["tau"] == 0.7 and calibration["parent"]["name"] == "imad-router-v1"
    # The training metrics are kept with the τ they were measured at, and the card says so.
    assert config["metrics"]["tau"] == 0.7
    assert "τ = 0.7 (the threshold when they were measured" in (new / "README.md").read_text()
    # Independently: the new τ escalates the largest share ≤ 25% of the 33 validation rows.
    rows = router_training_rows(router, feature_cache=workdir / "features")
    p = router.predict_proba(rows.validation_features)
    escalated = int(np.sum(p < router.config.threshold.tau))
    assert escalated == calibration["choice"]["escalated"] == math.floor(0.25 * 33)
    assert calibration["choice"]["achieved_rate"] == pytest.approx(escalated / 33)
    # The weights and everything else are the original's; the original is untouched.
    assert (new / WEIGHTS_FILE).read_bytes() == original[WEIGHTS_FILE]
    assert {name: (trained / name).read_bytes() for name in original} == original
    assert np.array_equal(Router.load(trained).predict_proba(rows.validation_features), p)


def test_calibrate_for_a_token_budget_on_given_corpus(trained, workdir, capsys):
    out = workdir / "budget"
    corpus = FIXTURE / "gqa.jsonl"
    assert calibrate("--router", str(trained), "--token-budget", "1000", "--debate-tokens", "2000",
                     "--single-tokens", "500", "--corpus", str(corpus), "--out", str(out), "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["checkpoint"] == str(out) and report["token_budget"]["debate_tokens"] == 2000
    choice = report["choice"]
    assert choice["target_rate"] == pytest.approx(0.25)
    table = load_corpus([corpus], feature_cache=workdir / "features")
    unparsed = table.summary["parse_failures"]
    assert choice["unparsed"] == unparsed > 0 and choice["questions"] == 90
    p = np.sort(Router.load(out).predict_proba(table.features))
    escalated = unparsed + int(np.sum(p < report["tau"]))
    assert escalated == choice["escalated"] == math.floor(0.25 * 90)
    assert Router.load(out).config.threshold.tau == report["tau"]
    assert "budget of 1000 tokens/question" in Router.load(out).config.threshold.method


@pytest.mark.parametrize(("arguments", "message"), [
    (["--router", "MISSING", "--target-trigger-rate", "0.2"], "no router checkpoint directory"),
    (["--target-trigger-rate", "1.5"], "target_rate (--target-trigger-rate): must be a finite number "
                                       "in (0, 1), got '1.5'"),
    (["--target-trigger-rate", "0"], "must be a finite number in (0, 1), got '0'"),
    (["--token-budget", "900"], "a token budget needs the extra tokens"),
    (["--target-trigger-rate", "0.2", "--out", "TRAINED"], "must not replace the one it comes from"),
    (["--target-trigger-rate", "0.2", "--out", "NONEMPTY"], "exists and is not empty"),
    (["--target-trigger-rate", "0.2", "--corpus", "EMPTY"], "no labelled records"),
    (["--target-trigger-rate", "0.2"], "python -m training.calibrate"),
    (["--target-trigger-rate", "0.2", "--corpus", "BADLINE"], "badline.jsonl:1: not valid JSON"),
    (["--router", "imad-router-v9", "--target-trigger-rate", "0.2", "--corpus", "EMPTY"],
     "shipped routers: imad-router-v1, imad-router-v1.1"),
])
def test_bad_inputs(arguments, message, trained, tmp_path, capsys):
    (tmp_path / "nonempty").mkdir()
    (tmp_path / "nonempty" / "file").write_text("x")
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "badline.jsonl").write_text("{oops\n{}\n")
    names = {"MISSING": tmp_path / "missing", "TRAINED": trained, "NONEMPTY": tmp_path / "nonempty",
             "EMPTY": tmp_path / "empty.jsonl", "BADLINE": tmp_path / "badline.jsonl"}
    replaced = [str(names.get(a, a)) for a in arguments]
    if "--router" not in replaced:
        replaced = ["--router", str(trained), *replaced]
    if "--corpus" not in replaced and "python -m training.calibrate" not in message:
        replaced += ["--corpus", str(FIXTURE / "gqa.jsonl")]
    assert calibrate(*replaced) in (2, 3)  # usage or failed run
    assert "imad calibrate: error: " in (err := capsys.readouterr().err) and message in err


def test_exactly_one_target(capsys):
    with pytest.raises(SystemExit) as exit_info:
        calibrate("--target-trigger-rate", "0.2", "--token-budget", "1000")
    assert exit_info.value.code == 2 and "not allowed with" in capsys.readouterr().err


def test_training_calibrate_entry_point_prints_a_typed_error_without_traceback():
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "training.calibrate", "--router", "imad-router-v9",
                             "--target-trigger-rate", "0.2"], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parents[2])
    assert result.returncode == 3 and "Traceback" not in result.stderr
    assert "python -m training.calibrate: error: no shipped router named 'imad-router-v9'" in result.stderr
