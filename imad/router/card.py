"""The model card (README.md) of a router checkpoint, rendered from its config.json.

The card is a pure function of the config, so saving a router twice writes the same bytes, and
a card can never disagree with the numbers stored beside it. The training record is read typed
(`imad.router.training_record`); sections with no recorded data (e.g. a router built by hand,
with no training record) are left out.
"""

from __future__ import annotations

import warnings
from typing import Any

from imad.data_licences import data_licence
from imad.router.card_metrics import card_number, metrics_section
from imad.router.config import CORE_KEYS
from imad.router.training_record import DataSummary, TrainingRecord


def render_model_card(config: dict[str, Any]) -> str:
    """Markdown model card for the checkpoint described by `config` (a config.json dict)."""
    name = config.get("name", "imad-router")
    record = TrainingRecord.from_dict({k: v for k, v in config.items() if k not in CORE_KEYS})
    sections = [
        f"# {name}\n\n"
        "A debate router for [imad](../../README.md): it reads the 41 features of one structured "
        "self-critique (SPEC §4) and predicts p = P(the kept answer is correct). Answers with "
        f"p < τ = {config['threshold']['tau']:g} are escalated to a multi-agent debate; the rest "
        "are kept.",
        _usage(name),
        _data(record.data),
        metrics_section(record.metrics, config["threshold"]),
        _threshold(config["threshold"]),
        _certificate(record.certificate),
        _calibration(config.get("calibrator")),
        _ood(config, record),
        _model(config, record),
        _versions(record.versions),
        _limits(record),
        _made_with(record),
        _retrain(),
    ]
    return "\n\n".join(section for section in sections if section) + "\n"


def _usage(name: str) -> str:
    return (
        "## Use\n\n"
        "```python\n"
        "from imad import Router\n"
        "from imad.decide import checkpoint_policy\n\n"
        f'router = Router.load("{name}")  # a shipped name, or this directory\'s path\n'
        "score = router.score(question, critique_response)  # RouterScore: p, cues, OOD flag\n"
        "decision = checkpoint_policy(router.config).decide(score)  # RouterDecision at the stored τ\n"
        "decision.escalate, decision.p, decision.reasons\n"
        "router.predict_proba(feature_matrix)  # (n, 41) raw features → (n,) probabilities\n"
        "```\n\n"
        "Loading checks the checkpoint schema, the feature list hash and every tensor shape, "
        "and refuses a checkpoint that does not match this version of imad."
    )


def _data(data: DataSummary | None) -> str:
    if data is None or not data.keys:
        return ""
    lines = [
        "## Training data\n",
        "| dataset | records | labelled | parse failures | share correct |",
        "|---|---:|---:|---:|---:|",
    ]
    datasets = data.datasets or {}
    for dataset, row in sorted(datasets.items()):
        lines.append(f"| {dataset} | {row.records} | {row.labelled} | {row.parse_failures} | "
                     f"{card_number(row.positive_rate)} |")
    lines.append("")
    for key, title in (
        ("model_ids", "Answering model"),
        ("prompt_versions", "Prompt version"),
        ("confidence_sources", "Confidence source"),
        ("modes", "Mode"),
    ):
        values = getattr(data, key)
        if values:
            lines.append(f"- {title}: {', '.join(f'`{v}`' for v in values)}")
    split = data.split
    if split is not None and split.keys:
        lines.append(
            f"- Split: {split.train} training / {split.validation} validation rows, "
            f"stratified by {split.stratify} (seed {split.seed}); the scaler is fitted on "
            "the training rows only."
        )
    for file in data.files or ():
        lines.append(f"- File `{file.path}`: {file.records} records, sha256 "
                     f"`{str(file.sha256)[:16]}…`")
    return "\n".join(lines) + _data_licences(sorted(datasets))


def _data_licences(datasets: list[str]) -> str:
    """The licence table of the training datasets: their terms travel with the weights."""
    if not datasets:
        return ""
    lines = ["\n\n### Data licences\n",
             "The training rows hold these datasets' questions (the weights hold no text); each "
             "dataset keeps its own licence.\n",
             "| dataset | licence | source | cite |", "|---|---|---|---|"]
    for dataset in datasets:
        known = data_licence(dataset)
        lines.append(f"| {dataset} | not recorded: check the dataset's own terms | – | – |"
                     if known is None else
                     f"| {dataset} | {known.licence} | {known.source} | {known.attribution} |")
    return "\n".join(lines)


def _calibration(section: dict[str, Any] | None) -> str:
    """What p's calibrator was fitted on; nothing for the identity (checkpoints without one)."""
    if section is None:
        return ""
    from imad.router.calibrators import DecreasingCalibratorWarning, calibrator_from_dict

    with warnings.catch_warnings():  # loading the router already warned; the card says it
        warnings.simplefilter("ignore", DecreasingCalibratorWarning)
        calibrator = calibrator_from_dict(section)
    decreasing = ("\n\n**The map decreases**: a higher raw score gives a lower p, so this "
                  "router ranks answers backwards. Refit the calibrator on more labelled answers."
                  if calibrator.decreasing else "")
    return ("## Calibration\n\np is the network's raw score mapped by a calibrator: "
            f"{calibrator.describe()}; its parameters: {calibrator.describe_parameters()}. τ is "
            "compared with that calibrated p. The metrics above were measured on the raw score."
            + decreasing)


def _threshold(threshold: dict[str, Any]) -> str:
    return f"## Threshold\n\nτ = {threshold['tau']:g}: {threshold.get('method', 'not recorded')}."


def _certificate(certificate: Any) -> str:
    """The promise of a certified τ, with the numbers it rests on; nothing when τ is not certified."""
    if certificate is None:
        return ""
    labels = certificate.labels
    span = ("" if labels.first is None or labels.last is None
            else f", unix time {labels.first:.0f} to {labels.last:.0f}")
    warned = "".join(f"\n\n**Warning**: {warning}" for warning in certificate.warnings)
    return (f"## Certificate\n\n{certificate.promise()[0].upper()}{certificate.promise()[1:]}. "
            f"Certified on {certificate.labelled} labelled answers ({labels.source}{span}): "
            f"{certificate.kept} kept at τ, {certificate.kept_errors} of them wrong; upper "
            f"confidence bound of the kept error {certificate.upper_bound:.4f}. Method: "
            f"{certificate.method}. It assumes the traffic is exchangeable with the labelled "
            f"answers. Router {certificate.router.name} (config {certificate.router.hash[:12]}, "
            f"scorer {certificate.router.scorer[:12]}); certificate sha256 `{certificate.hash}`."
            + warned)


def _ood(config: dict[str, Any], record: TrainingRecord) -> str:
    ood = config.get("ood")
    if not ood:
        return ("## Out-of-distribution flag\n\nThis checkpoint has no OOD statistics: decisions "
                "report `ood = None`. Add them with `python -m training.export --add-ood NAME`.")
    fitted = record.ood_statistics
    rows = fitted.rows if fitted is not None else None
    lines = [
        "## Out-of-distribution flag\n",
        f"- Detector: {ood['method']} distance of the scaled features to the training rows; an "
        f"answer is flagged (`decision.ood`) when its score exceeds {ood['threshold']:.4f}, the "
        f"{ood.get('threshold_rule', 'validation threshold')}.",
        f"- Policy: `{config.get('ood_policy', 'flag')}` (\"flag\" reports it, \"escalate\" also "
        "sends it to the debate; `--ood-policy` overrides).",
    ]
    if rows is not None and rows.keys:
        lines.append(f"- Fitted on {_known(rows.train)} training rows, threshold on "
                     f"{_known(rows.validation)} validation rows.")
    if fitted is not None and fitted.command:
        lines.append(f"- Computed by `{fitted.command}`.")
    return "\n".join(lines)


def _known(value: Any) -> Any:
    return "?" if value is None else value


def _model(config: dict[str, Any], record: TrainingRecord) -> str:
    model = config["model"]
    features = config["features"]
    lines = [
        "## Model\n",
        f"- Encoder: {model['depth']} × (Linear → BatchNorm → ReLU → Dropout {model['dropout']:g}),"
        f" width {model['width']}; heads ℓ_p and ℓ_u.",
        f"- p = σ(w1 · logit(clip(conf_initial, {model['confidence_clip']:g})) + w2 · ℓ_p + b), "
        "u = σ(ℓ_u); `conf_initial` enters raw, so p never depends on the other rows of a batch.",
        f"- Features: schema v{features['schema_version']}, {len(features['names'])} features, "
        f"hash `{features['hash'][:16]}…`.",
    ]
    training = record.training
    if training is not None and training.keys:
        loss = training.loss.to_dict() if training.loss is not None else {}  # every parameter
        loss_text = ", ".join(f"{k}={v}" for k, v in sorted(loss.items()) if k != "name")
        lines.append(f"- Loss: {loss.get('name', '?')} ({loss_text}).")
        optimiser = training.optimizer.to_dict() if training.optimizer is not None else {}
        if optimiser:
            name = optimiser.pop("name", "?")
            settings = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in optimiser.items())
            lines.append(f"- Optimiser: {name}; {settings}.")
    if "seed" in record.keys:
        lines.append(f"- Seed: {record.seed}.")
    return "\n".join(lines)


def _versions(versions: dict[str, Any] | None) -> str:
    if not versions:
        return ""
    return "## Versions\n\n" + "\n".join(f"- {k}: {v}" for k, v in sorted(versions.items()))


def _limits(record: TrainingRecord) -> str:
    data = record.data or DataSummary()
    models = data.model_ids or ["(not recorded)"]
    lines = [
        "## Limits\n",
        f"- The router learned the hesitation cues of the answers of {', '.join(models)}. Another "
        "LLM writes, hedges and states confidence differently, so its p is not calibrated for "
        "that model until you retrain on that model's answers (below).",
    ]
    if any("135m" in str(model).lower() for model in models):
        lines.append(
            "- The shipped router was trained on the answers of a 135M-parameter model "
            "(SmolLM2-135M-Instruct, 4-bit). Its verbal confidences are almost always 0 or 100 "
            "and its answers are close to chance, so the router's cues are weak and its metrics "
            "are far below the iMAD paper's (Gemini 2.0 Flash). It demonstrates the pipeline; "
            "it is not a router for a production model."
        )
    datasets = sorted(data.datasets or {})
    if datasets:
        lines.append(
            f"- Training questions come from {', '.join(datasets)} only; GQA is answered "
            "without its images (\"blind\") unless the corpus says otherwise. Calibration on "
            "other datasets is zero-shot and must be measured (`python -m training.evaluate`)."
        )
    lines.append(
        "- The metrics come from one validation split of the training corpus; the exported "
        "epoch was selected on that split, which makes them optimistic."
    )
    return "\n".join(lines)


def _made_with(record: TrainingRecord) -> str:
    """The commands that made this checkpoint, rebuilt from what config.json records."""
    commands = []
    settings = record.fit_settings
    if settings.keys:
        corpus = " ".join(f"--corpus {path}" for path in settings.corpus or ())
        schema = 1 if settings.feature_schema is None else settings.feature_schema
        commands.append(f"python -m training.fit {corpus} --feature-schema {schema} --output "
                        f"{settings.output}")
    calibration = record.calibration
    if calibration is not None and calibration.token_budget is not None \
            and calibration.validation is not None and calibration.validation.files \
            and calibration.parent is not None and calibration.parent.path:
        budget, files = calibration.token_budget, calibration.validation.files
        commands.append(f"imad calibrate --router {calibration.parent.path} --token-budget "
                        f"{budget.tokens_per_question:g} --debate-tokens {budget.debate_tokens:g} "
                        f"--corpus {' '.join(files)} --out <this directory>")
    ood_command = (record.ood_statistics.command if record.ood_statistics is not None else None) or ""
    if ood_command.startswith("python -m training.export"):
        commands.append(ood_command)
    if not commands:
        return ""
    return ("## How this checkpoint was made\n\n```bash\n" + "\n".join(commands) + "\n```\n\n"
            "The other training settings are the ones recorded in config.json (`training.config`).")


def _retrain() -> str:
    return (
        "## Retrain for your model\n\n"
        "```bash\n"
        "python -m training.corpus --llm SPEC --dataset pubmedqa --dataset gqa\n"
        "python -m training.fit --corpus corpus/<your-model>/ --output checkpoints/my-router\n"
        "```\n\n"
        "`SPEC` names any chat back-end (e.g. `openai:MODEL@http://127.0.0.1:8000/v1`); "
        "`python -m training.fit --help` lists the training options."
    )
