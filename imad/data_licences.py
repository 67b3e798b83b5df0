"""The licence and source of each dataset a router can be trained on, for the model cards.

A checkpoint records which datasets its training rows came from (`TrainingRecord.data.datasets`);
its card (`imad.router.card`) states their licences from this table, so a user of the weights
knows which terms travel with them (GQA's CC BY 4.0 asks for attribution). The entries repeat
the provenance files of the shared datasets (`datasets/<name>/SOURCE.md`) and the repository's
NOTICE; a dataset missing here is named on the card as "not recorded", never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DataLicence:
    """Who may use a dataset on what terms, and where it comes from."""

    licence: str
    source: str
    attribution: str


DATA_LICENCES: dict[str, DataLicence] = {
    "pubmedqa": DataLicence("MIT", "https://github.com/pubmedqa/pubmedqa",
                            "Jin et al., PubMedQA, EMNLP 2019"),
    "gqa": DataLicence("CC BY 4.0", "https://cs.stanford.edu/people/dorarad/gqa/ (questions via "
                       "https://github.com/gqa-ood/GQA-OOD)", "Hudson & Manning, GQA, CVPR 2019"),
    "medqa": DataLicence("MIT", "https://github.com/jind11/MedQA",
                         "Jin et al., MedQA, Applied Sciences 2021"),
    "gsm8k": DataLicence("MIT", "https://github.com/openai/grade-school-math",
                         "Cobbe et al., GSM8K, 2021"),
    "mmlu": DataLicence("MIT", "https://github.com/hendrycks/test",
                        "Hendrycks et al., MMLU, ICLR 2021"),
    "mmlu_pro": DataLicence("MIT (dataset card; repository Apache-2.0)",
                            "https://github.com/TIGER-AI-Lab/MMLU-Pro", "Wang et al., MMLU-Pro, 2024"),
    "bbh": DataLicence("MIT (tasks from BIG-bench, Apache-2.0)",
                       "https://github.com/suzgunmirac/BIG-Bench-Hard",
                       "Suzgun et al., BIG-Bench Hard, 2022"),
    "scienceqa": DataLicence("CC BY-NC-SA 4.0 (non-commercial)", "https://github.com/lupantech/ScienceQA",
                             "Lu et al., ScienceQA, NeurIPS 2022"),
}


def data_licence(dataset: str) -> DataLicence | None:
    """The licence of `dataset` (a loader name such as "gqa"), None when it is not recorded."""
    return DATA_LICENCES.get(dataset)
