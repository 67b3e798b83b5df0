"""Zero-shot calibration evaluation of a router checkpoint, one idea per module.

- `config`: `EvaluateConfig`, the typed settings of `python -m training.evaluate`;
- `responses`: self-critique answers built or reused through the corpus cache;
- `training_rows`: the router's own training corpus and split (the logistic-regression
  baseline is fitted on it; `imad calibrate` chooses τ on its validation part);
- `scoring`: features → router and baseline probabilities → metrics for one dataset;
- `report`: the JSON document and the Markdown report;
- `plots`: reliability diagrams (matplotlib, imported lazily);
- `ablation`, `corpus_choice`: what the notebooks (notebooks/) train and on which corpus.
The orchestration and the command line are in `training.evaluate`; the end-to-end benchmark
(`--e2e`) is its own package, `training.e2e`.
"""
