"""The end-to-end benchmark: accuracy and cost of CoT, self-consistency, full MAD,
DOWN and iMAD with AceMAD or SVR-MAD on the same questions, one idea per module.

- `config`: `E2EConfig`, the typed settings of `python -m training.evaluate --e2e`;
- `methods`: the registry of compared methods and the token goal against full MAD;
- `calls`: the record/replay call cache, token metering, and reuse of cached self-critiques;
- `outcome`: `Answered` and `QuestionOutcome`, one method's answer to one question and its cost;
- `benchmark`: `evaluate_e2e`, every method on every question, one outcome each;
- `metrics`: accuracy, tokens/question, ApT, the decision breakdown, the share of full MAD;
- `paper_table3`: the iMAD paper's numbers, as reference beside ours;
- `report`: the JSON document and the Markdown report.
The command line is `training.evaluate` (`--e2e`); the zero-shot calibration report it shares
datasets, answers and report writing with is `training.evaluation`.
"""
