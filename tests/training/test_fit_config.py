"""`FitConfig`: SPEC defaults, validation naming field and flag, file + flag precedence."""

from __future__ import annotations

import json

import pytest

from imad.constraints import settable_fields
from imad.errors import ConfigError
from training.config import FitConfig, build_parser, config_from_args
from training.fit import main


def test_defaults_are_the_spec_ones():
    config = FitConfig()
    assert (config.learning_rate, config.batch_size, config.epochs, config.seed) == (
        1e-3, 64, 50, 42)
    assert (config.split_seed, config.validation_fraction) == (42, 0.2)
    assert (config.width, config.depth, config.dropout) == (200, 6, 0.2)
    assert (config.alpha0, config.alpha1, config.gamma, config.tau) == (2.0, 1.0, 2.0, 0.7)
    assert (config.lambda_cp, config.mu_ece, config.ece_bins) == (6.0, 5.0, 15)
    assert config.corpus == ("corpus/smollm2-135m-instruct-q4_1",)
    assert config.output == "checkpoints/imad-router-v2"
    assert not config.early_stopping and not config.class_balanced_alpha


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["--batch-size", "0"], "batch_size (--batch-size)"),
        (["--validation-fraction", "1.0"], "validation_fraction (--validation-fraction)"),
        (["--learning-rate", "-1"], "learning_rate (--learning-rate)"),
        (["--dropout", "1.0"], "dropout (--dropout)"),
        (["--tau", "0"], "tau (--tau)"),
        (["--ece-bins", "0"], "ece_bins (--ece-bins)"),
        (["--alpha0", "-2"], "alpha0 (--alpha0)"),
        (["--class-balanced-alpha", "--alpha0", "3"],
         "class_balanced_alpha (--class-balanced-alpha)"),
        (["--devices", ""], "devices (--devices)"),
    ],
)
def test_invalid_values_name_field_and_flag(argv, field):
    with pytest.raises(ConfigError) as error:
        config_from_args(argv)
    assert error.value.field == field


def test_wrong_type_in_a_file_is_named(tmp_path):
    path = tmp_path / "fit.json"
    path.write_text(json.dumps({"epochs": "ten"}))
    expected = r"epochs \(--epochs\): must be an integer in \[1, 100000\], got 'ten'"
    with pytest.raises(ConfigError, match=expected):
        config_from_args(["--config", str(path)])


def test_json_file_then_flags(tmp_path):
    path = tmp_path / "fit.json"
    path.write_text(json.dumps({"epochs": 7, "batch_size": 32, "corpus": ["a.jsonl"]}))
    config = config_from_args(["--config", str(path), "--epochs", "9"])
    assert (config.epochs, config.batch_size, config.corpus) == (9, 32, ("a.jsonl",))


def test_toml_file(tmp_path):
    path = tmp_path / "fit.toml"
    path.write_text('loss = "bce"\nearly_stopping = true\nlearning_rate = 0.01\n'
                    'corpus = ["x", "y"]\n')
    config = config_from_args(["--config", str(path)])
    assert (config.loss, config.early_stopping, config.learning_rate) == ("bce", True, 0.01)
    assert config.corpus == ("x", "y")


def test_unknown_key_in_file_is_named(tmp_path):
    path = tmp_path / "fit.json"
    path.write_text(json.dumps({"epoch": 3}))
    with pytest.raises(ConfigError) as error:
        config_from_args(["--config", str(path)])
    assert error.value.field == "epoch" and str(path) in str(error.value)


def test_missing_or_broken_config_file(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        config_from_args(["--config", str(tmp_path / "none.json")])
    broken = tmp_path / "broken.toml"
    broken.write_text("epochs = = 3")
    with pytest.raises(ConfigError, match="cannot parse"):
        config_from_args(["--config", str(broken)])


def test_boolean_and_passthrough_flags():
    config = config_from_args(["--early-stopping", "--no-progress-bar", "--no-export",
                               "--no-feature-cache", "--accelerator", "gpu", "--devices", "2",
                               "--strategy", "ddp", "--corpus", "a", "b"])
    assert config.early_stopping and not config.progress_bar and not config.export
    assert config.feature_cache is None
    assert (config.accelerator, config.devices, config.strategy) == ("gpu", "2", "ddp")
    assert config.corpus == ("a", "b")


def test_saved_config_round_trips(tmp_path):
    config = FitConfig(epochs=3, corpus=("x",), loss="focal")
    config.save(tmp_path / "config.json")
    assert FitConfig.from_file(tmp_path / "config.json") == config


def test_every_field_has_a_flag():
    flags = {action.dest for action in build_parser()._actions}
    assert set(settable_fields(FitConfig)) <= flags


def test_help_exits_cleanly(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "--corpus" in out and "--early-stopping" in out and "--accelerator" in out


def test_main_reports_a_bad_flag_value_and_returns_2(capsys):
    assert main(["--batch-size", "0"]) == 2
    assert "batch_size (--batch-size): must be an integer in [1, 1048576], got 0" in capsys.readouterr().err


def test_main_reports_a_missing_corpus_and_returns_3(tmp_path, capsys):
    assert main(["--corpus", str(tmp_path / "none"), "--no-progress-bar"]) == 3
    assert "does not exist" in capsys.readouterr().err
