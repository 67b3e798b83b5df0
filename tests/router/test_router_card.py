"""The model card is rendered from config.json and says what a user must know."""

from __future__ import annotations

from imad.router.card import render_model_card


def _config(model_ids):
    return {
        "name": "imad-router-v1",
        "threshold": {"tau": 0.7, "method": "fixed"},
        "model": {"width": 200, "depth": 6, "dropout": 0.2, "confidence_clip": 0.01},
        "features": {"schema_version": 1, "names": ["a"] * 41, "hash": "f" * 64},
        "data": {
            "datasets": {"pubmedqa": {"records": 10, "labelled": 9, "parse_failures": 1,
                                      "positive_rate": 0.5}},
            "model_ids": model_ids,
            "split": {"train": 7, "validation": 2, "stratify": "label", "seed": 42},
        },
        "metrics": {
            "validation": {
                "router": {"auroc": 0.71, "ece": 0.05, "adaptive_ece": 0.06, "brier": 0.2,
                           "trigger_rate": 0.3, "n": 2},
                "confidence_initial": {"auroc": 0.6, "ece": float("nan"), "brier": 0.3},
                "logistic_regression": {"auroc": 0.65, "ece": 0.1, "brier": 0.25},
            },
            "selection": "Exported epoch 3.",
        },
        "versions": {"torch": "2.13.0"},
        "seed": 42,
    }


def test_card_names_data_metrics_versions_and_retraining():
    card = render_model_card(_config(["SmolLM2-135M-Instruct-Q4_1"]))
    assert card.startswith("# imad-router-v1\n")
    assert "| pubmedqa | 10 | 9 | 1 | 0.500 |" in card
    assert "| this router (FocusCal MLP) | 0.710 | 0.050 | 0.060 | 0.200 | 0.300 |" in card
    assert "| raw `conf_initial` alone (DOWN-style) | 0.600 | – |" in card
    assert "logistic regression on the 41 features" in card
    assert "- torch: 2.13.0" in card
    assert "135M-parameter model" in card
    assert "python -m training.corpus --llm SPEC" in card
    assert "python -m training.fit --corpus" in card


def test_card_for_another_model_has_no_135m_caveat():
    card = render_model_card(_config(["qwen3-8b"]))
    assert "135M" not in card and "qwen3-8b" in card


def test_card_without_training_record_still_renders():
    config = _config([])
    for key in ("data", "metrics", "versions", "seed"):
        del config[key]
    card = render_model_card(config)
    assert "## Training data" not in card and "## Metrics" not in card and "## Limits" in card


def test_card_of_a_recalibrated_router_gives_the_tau_its_trigger_rates_were_measured_at():
    config = _config(["SmolLM2-135M-Instruct-Q4_1"])
    config["threshold"] = {"tau": 0.004, "method": "chosen by imad calibrate"}
    config["metrics"]["tau"] = 0.7
    card = render_model_card(config)
    assert "On the validation split (2 rows), τ = 0.7 (the threshold when they were measured; " \
           "this checkpoint's τ = 0.004, see Threshold)." in card
    assert "p < τ = 0.004 are escalated" in card


def test_card_states_the_ood_flag_and_the_commands_that_made_it():
    config = {**_config(["m"]),
              "training": {"config": {"corpus": ["corpus/x"], "feature_schema": 2, "output": "ckpt/r"}},
              "calibration": {"token_budget": {"tokens_per_question": 850.0, "debate_tokens": 5600.0},
                              "validation": {"files": ["runs/c.jsonl"]}, "parent": {"path": "ckpt/r"}},
              "ood": {"method": "mahalanobis", "threshold": 21.5,
                      "threshold_rule": "validation split's 99th percentile (inverted_cdf)"},
              "ood_policy": "flag",
              "ood_statistics": {"command": "python -m training.export --add-ood r",
                                 "rows": {"train": 8, "validation": 2}}}
    card = render_model_card(config)
    assert "exceeds 21.5000, the validation split's 99th percentile" in card
    assert "Fitted on 8 training rows, threshold on 2 validation rows." in card
    assert ("```bash\npython -m training.fit --corpus corpus/x --feature-schema 2 --output ckpt/r\n"
            "imad calibrate --router ckpt/r --token-budget 850 --debate-tokens 5600 --corpus "
            "runs/c.jsonl --out <this directory>\npython -m training.export --add-ood r\n```") in card


def test_card_without_ood_statistics_says_how_to_add_them():
    card = render_model_card(_config(["m"]))
    assert "no OOD statistics: decisions report `ood = None`" in card
    assert "How this checkpoint was made" not in card  # nothing recorded to rebuild it from


def test_card_states_the_licence_of_each_training_dataset():
    config = _config(["m"])
    config["data"]["datasets"]["gqa"] = {"records": 4, "labelled": 4, "parse_failures": 0,
                                         "positive_rate": 0.25}
    config["data"]["datasets"]["my_private_set"] = {"records": 1, "labelled": 1,
                                                    "parse_failures": 0, "positive_rate": 1.0}
    card = render_model_card(config)
    assert "### Data licences" in card
    assert "| gqa | CC BY 4.0 | https://cs.stanford.edu/people/dorarad/gqa/" in card
    assert "| pubmedqa | MIT | https://github.com/pubmedqa/pubmedqa |" in card
    assert "| my_private_set | not recorded: check the dataset's own terms |" in card


def test_shipped_cards_are_rendered_from_their_configs_and_name_gqa_attribution():
    import json

    from tests.conftest import REPO_ROOT

    for directory in sorted((REPO_ROOT / "checkpoints").iterdir()):
        config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
        card = (directory / "README.md").read_text(encoding="utf-8")
        assert card == render_model_card(config), f"re-render {directory.name}'s card"
        assert "| gqa | CC BY 4.0 |" in card and "Hudson & Manning" in card
