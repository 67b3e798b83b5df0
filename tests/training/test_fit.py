"""`training.fit` end to end on the fixture corpus: determinism, export, recorded metadata."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from imad.router import Router
from imad.router.checkpoint import CARD_FILE, CONFIG_FILE, WEIGHTS_FILE
from training.config import FitConfig
from training.fit import FitResult, fit, main

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "corpus_small"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fit")


def small_config(workdir: Path, name: str, **overrides) -> FitConfig:
    settings = dict(corpus=(str(FIXTURE),), epochs=3, progress_bar=False,
                    feature_cache=str(workdir / "feature-cache"),
                    output=str(workdir / name / "checkpoint"), run_dir=str(workdir / name / "run"))
    return FitConfig(**{**settings, **overrides})


@pytest.fixture(scope="module")
def first_run(workdir) -> FitResult:
    return fit(small_config(workdir, "first"))


@pytest.fixture(scope="module")
def second_run(workdir, first_run) -> FitResult:
    return fit(small_config(workdir, "second"))


@pytest.fixture(scope="module")
def cli_checkpoint(workdir, first_run) -> Path:
    output = workdir / "cli" / "checkpoint"
    code = main(["--corpus", str(FIXTURE), "--epochs", "3", "--no-progress-bar",
                 "--feature-cache", str(workdir / "feature-cache"), "--output", str(output),
                 "--run-dir", str(workdir / "cli" / "run")])
    assert code == 0
    return output


def test_same_seed_gives_identical_predictions(first_run, second_run, cli_checkpoint):
    rows = first_run.validation_features
    expected = first_run.router.predict_proba(rows)
    assert np.array_equal(second_run.router.predict_proba(rows), expected)
    for checkpoint in (first_run.checkpoint, second_run.checkpoint, cli_checkpoint):
        assert np.array_equal(Router.load(checkpoint).predict_proba(rows), expected)
    weights = [(c / WEIGHTS_FILE).read_bytes() for c in (first_run.checkpoint, cli_checkpoint)]
    assert weights[0] == weights[1]


def test_another_seed_gives_other_predictions(workdir, first_run):
    threads = torch.get_num_threads()
    other = fit(small_config(workdir, "seed7", seed=7, export=False))
    assert torch.get_num_threads() == threads  # fit trains on 1 thread, then restores
    rows = first_run.validation_features
    assert other.checkpoint is None
    assert not np.array_equal(other.router.predict_proba(rows),
                              first_run.router.predict_proba(rows))
    # The split does not depend on the training seed.
    assert np.array_equal(other.validation_features, first_run.validation_features)


def test_checkpoint_records_data_metrics_seed_and_versions(first_run):
    config = json.loads((first_run.checkpoint / CONFIG_FILE).read_text())
    assert config["seed"] == 42
    assert config["data"]["parse_failures"] == 15 and config["data"]["labelled"] == 165
    assert config["data"]["split"]["validation"] == 33
    assert config["data"]["model_ids"] == ["synthetic-fixture"]
    validation = config["metrics"]["validation"]
    assert set(validation) == {"router", "confidence_initial", "logistic_regression"}
    for row in validation.values():
        assert row["n"] == 33 and 0.0 <= row["ece"] <= 1.0 and 0.0 <= row["auroc"] <= 1.0
    assert validation["router"] == pytest.approx(first_run.metrics["validation"]["router"])
    assert config["training"]["loss"]["name"] == "focuscal"
    assert config["training"]["optimizer"]["epochs_run"] == 3
    assert config["training"]["config"]["epochs"] == 3
    assert {"torch", "lightning", "numpy", "python", "safetensors"} <= set(config["versions"])
    assert "fixed at the iMAD paper's default 0.7" in config["threshold"]["method"]
    card = (first_run.checkpoint / CARD_FILE).read_text()
    assert "synthetic-fixture" in card and "logistic regression on the 41 features" in card


def test_router_beats_nothing_but_is_a_real_scorer(first_run):
    p = first_run.router.predict_proba(first_run.validation_features)
    assert p.shape == (33,) and np.all((p > 0) & (p < 1)) and np.unique(p).size > 20
    assert first_run.metrics["validation"]["router"]["auroc"] > 0.6  # the fixture has signal


def test_run_dir_holds_the_resolved_config_and_per_epoch_metrics(first_run):
    saved = json.loads((first_run.run_dir / "config.json").read_text())
    assert FitConfig.from_dict(saved) == small_config(first_run.run_dir.parents[1], "first")
    history = json.loads((first_run.run_dir / "metrics.json").read_text())["history"]
    assert [h["epoch"] for h in history] == [0, 1, 2]
    assert {"val/focuscal", "val/auroc", "val/ece", "val/brier"} <= set(history[0])
    assert list((first_run.run_dir / "logs").glob("version_*/metrics.csv"))


def test_early_stopping_and_last_epoch_selection(workdir):
    result = fit(small_config(workdir, "early", epochs=40, early_stopping=True, patience=1,
                              select_epoch="last", export=False))
    optimizer = result.router.metadata["training"]["optimizer"]
    assert optimizer["early_stopping"] and optimizer["epochs_run"] < 40
    assert optimizer["selected_epoch"] == optimizer["epochs_run"] - 1


def test_ablation_loss_with_class_balanced_alpha(workdir):
    result = fit(small_config(workdir, "bce", loss="bce", class_balanced_alpha=True, epochs=2,
                              export=False))
    loss = result.router.metadata["training"]["loss"]
    assert loss["name"] == "bce" and loss["class_balanced_alpha"]
    # 132 training rows, 71 right, 61 wrong: α0 = 132 / (2·61), α1 = 132 / (2·71).
    assert (loss["alpha0"], loss["alpha1"]) == pytest.approx((132 / 122, 132 / 142))


def test_summary_shows_auroc_within_each_dataset_and_task_type(first_run):
    """Issue 35: the pooled AUROC beside the within-dataset ones, with intervals, in the result,
    metrics.json and the printed summary, and what the router learned."""
    from training.fit import format_metrics
    from training.metrics import auroc

    board = first_run.metrics["scoreboard"]
    pooled = board["pooled"]["router"]
    assert pooled["auroc"] == pytest.approx(first_run.metrics["validation"]["router"]["auroc"])
    assert pooled["low"] <= pooled["auroc"] <= pooled["high"]
    assert set(board["dataset"]) == {"gqa", "pubmedqa"} and set(board["task_type"])
    assert sum(row["router"]["n"] for row in board["dataset"].values()) == pooled["n"]
    gqa = board["dataset"]["gqa"]["router"]
    assert math.isnan(gqa["auroc"]) or gqa["low"] <= gqa["auroc"] <= gqa["high"]
    importance = first_run.metrics["importance"]
    assert len(importance) == len(first_run.router.feature_names)
    assert importance[0]["auroc_drop"] >= importance[-1]["auroc_drop"]
    recorded = json.loads((first_run.run_dir / "metrics.json").read_text())
    assert recorded["scoreboard"]["pooled"]["router"]["n"] == pooled["n"]
    text = format_metrics(first_run.metrics)
    assert "dataset=gqa" in text and "dataset=pubmedqa" in text and "task_type=" in text
    assert "what the router learned" in text
    assert auroc(first_run.validation_labels,
                 first_run.router.predict_proba(first_run.validation_features)) \
        == pytest.approx(pooled["auroc"])


def test_the_checkpoint_and_its_card_carry_the_within_dataset_numbers(first_run):
    reloaded = Router.load(first_run.checkpoint)
    stored = reloaded.config.record.metrics
    assert stored.scoreboard["pooled"]["router"]["auroc"] == pytest.approx(
        first_run.metrics["scoreboard"]["pooled"]["router"]["auroc"])
    assert stored.importance[0]["feature"] == first_run.metrics["importance"][0]["feature"]
    card = (first_run.checkpoint / CARD_FILE).read_text()
    assert "### AUROC within each dataset and task type" in card
    assert "| dataset gqa |" in card and "| dataset pubmedqa |" in card
    assert "What the router learned" in card
