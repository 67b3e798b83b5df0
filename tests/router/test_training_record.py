"""`imad.router.training_record`: the checkpoint's provenance as typed, frozen sections that
round-trip both shipped layouts (v1 and v2 routers, and their calibrated versions) to the same
JSON and the same bytes, and read back the values training and the model card use."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from imad.errors import ConfigError
from imad.router import Router
from imad.router.checkpoint import CARD_FILE, CONFIG_FILE, WEIGHTS_FILE
from imad.router.config import CORE_KEYS
from imad.router.training_record import (
    DataSplit,
    FitSettings,
    Metrics,
    ScoreRow,
    TrainingRecord,
)

CHECKPOINTS = Path(__file__).resolve().parents[2] / "checkpoints"
SHIPPED = ["imad-router-v1", "imad-router-v1.1", "imad-router-v2", "imad-router-v2.1"]


def shipped_record(name: str) -> dict:
    config = json.loads((CHECKPOINTS / name / CONFIG_FILE).read_text(encoding="utf-8"))
    return {k: v for k, v in config.items() if k not in CORE_KEYS}


@pytest.mark.parametrize("name", SHIPPED)
def test_each_shipped_record_round_trips_to_the_same_json_in_the_same_order(name):
    recorded = shipped_record(name)
    again = TrainingRecord.from_dict(recorded).to_dict()
    assert again == recorded
    assert json.dumps(again) == json.dumps(recorded)  # key order too, at every level


@pytest.mark.parametrize("name", SHIPPED)
def test_load_then_save_writes_the_same_bytes(name, tmp_path):
    saved = Router.load(name).save(tmp_path / name)
    for file in (CONFIG_FILE, CARD_FILE, WEIGHTS_FILE):
        assert (saved / file).read_bytes() == (CHECKPOINTS / name / file).read_bytes(), file


def test_the_two_layouts_differ_and_each_keeps_its_own():
    v1, v21 = shipped_record("imad-router-v1"), shipped_record("imad-router-v2.1")
    assert list(v1["metrics"])[:3] == ["validation", "selection", "tau"]
    assert list(v21["metrics"])[:3] == ["tau", "validation", "selection"]
    # issue 35: the scoreboard, recomputed from the recorded split, follows in both
    assert list(v1["metrics"])[3:] == list(v21["metrics"])[3:] == ["scoreboard", "importance"]
    assert "feature_schema" not in v1["training"]["config"]
    assert TrainingRecord.from_dict(v1).fit_settings.feature_schema is None
    assert TrainingRecord.from_dict(v21).fit_settings.feature_schema == 2


def test_typed_values_of_the_shipped_v2_router():
    record = Router.load("imad-router-v2").config.record
    assert record.seed == 42
    assert record.data.split == DataSplit.from_dict(shipped_record("imad-router-v2")["data"]["split"])
    assert (record.data.split.train, record.data.split.validation, record.data.split.seed) == (1591, 398, 42)
    assert record.data.datasets["gqa"].labelled == 994 and record.data.labelled == 1989
    assert record.data.confidence_sources == ("verbal",)
    assert record.corpus_paths == ("corpus/smollm2-135m-instruct-q4_1/gqa.jsonl",
                                   "corpus/smollm2-135m-instruct-q4_1/pubmedqa.jsonl")
    assert len(record.corpus_hashes) == 2
    settings = record.fit_settings
    assert (settings.validation_fraction, settings.split_seed, settings.feature_cache) == \
        (0.2, 42, "runs/feature-cache")
    assert settings.extra["epochs"] == 50  # the other flags, kept as given
    assert record.training.optimizer.selected_epoch == 8
    assert record.training.loss.name == "focuscal" and record.training.loss.n_bins == 15
    assert record.metrics.validation["router"].n == 398
    assert record.ood_statistics.rows.train == 1591
    assert Router.load("imad-router-v2.1").config.record.calibration.token_budget.debate_tokens == 5600.0


def test_metadata_stays_a_plain_json_copy():
    router = Router.load("imad-router-v1")
    metadata = router.metadata
    assert metadata == shipped_record("imad-router-v1")
    metadata["data"]["split"]["seed"] = 7
    assert router.config.record.data.split.seed == 42


def test_sections_are_frozen():
    record = Router.load("imad-router-v1").config.record
    with pytest.raises(AttributeError):
        record.data.split.seed = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        record.data.datasets["gqa"] = None  # type: ignore[index]


def test_unknown_sections_and_keys_survive_in_extra_in_place():
    recorded = {"seed": 1, "notes": {"by": "hand"}, "data": {"records": 3, "origin": "lab"}}
    record = TrainingRecord.from_dict(recorded)
    assert record.extra["notes"]["by"] == "hand" and record.data.extra["origin"] == "lab"
    assert json.dumps(record.to_dict()) == json.dumps(recorded)


def test_with_sections_replaces_in_place_and_appends_new_ones():
    record = TrainingRecord.from_dict({"seed": 1, "metrics": {"selection": "x"}, "versions": {}})
    updated = record.with_sections(metrics=Metrics(selection="y"), ood_statistics={"command": "c"})
    assert list(updated.to_dict()) == ["seed", "metrics", "versions", "ood_statistics"]
    assert updated.metrics.selection == "y" and record.metrics.selection == "x"


@pytest.mark.parametrize(("metrics", "keys"), [
    ({"validation": {}, "selection": "s", "tau": 0.7}, ["tau", "validation", "selection"]),
    ({"validation": {}, "selection": "s"}, ["tau", "validation", "selection"]),
])
def test_metrics_note_the_tau_they_were_measured_at_first(metrics, keys):
    measured = Metrics.from_dict(metrics).measured_at(0.3)
    assert list(measured.to_dict()) == keys
    assert measured.tau == metrics.get("tau", 0.3)


def test_a_section_built_in_code_writes_the_fields_it_was_given():
    row = ScoreRow(auroc=float("nan"), n=4)
    assert list(row.to_dict()) == ["auroc", "n"] and row.to_dict()["n"] == 4
    with pytest.raises(ConfigError, match=r"n: must be an integer in \[0, 1000000000000\], got -1"):
        ScoreRow(n=-1)


@pytest.mark.parametrize(("data", "message"), [
    ({"training": {"config": {"validation_fraction": 1.0}}},
     "training.config.validation_fraction: must be a finite number in (0, 1), got 1.0"),
    ({"data": {"split": {"seed": -2}}}, "data.split.seed: must be an integer in [0, 4294967295], got -2"),
    ({"data": {"files": [{"path": "a"}, {"sha256": 3}]}}, "data.files[1].sha256: must be a string"),
    ({"metrics": {"validation": {"router": {"ece": float("inf")}}}},
     "metrics.validation.router.ece: must be a finite number"),
])
def test_errors_name_the_json_path(data, message):
    with pytest.raises(ConfigError) as error:
        TrainingRecord.from_dict(data)
    assert str(error.value) == message or str(error.value).startswith(message)


def test_a_metric_may_be_nan_but_a_split_rate_may_not():
    row = Metrics.from_dict({"validation": {"router": {"auroc": float("nan")}}}).validation["router"]
    assert math.isnan(row.auroc)
    with pytest.raises(ConfigError,
                       match=r"train_positive_rate: must be a finite number in \[0, 1\], got nan"):
        DataSplit.from_dict({"train_positive_rate": float("nan")})
    assert FitSettings().keys == ()
