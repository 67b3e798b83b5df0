"""`imad report` and `imad log` run without torch or scikit-learn (issue 32: the report card is
training-free; SPEC §16: the decision side is torch-free)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from imad.decision_log import DecisionLog
from tests.decision_log.rows import labelled_rows

RUN = textwrap.dedent("""
    import json, sys
    from imad.cli.main import main
    status = [main(["report", "--log", sys.argv[1], "--json"]),
              main(["log", "export", "--log", sys.argv[1], "--format", "jsonl", "--out", sys.argv[2]])]
    print(json.dumps({"status": status, "modules": sorted(sys.modules)}), file=sys.stderr)
""")


def test_report_and_export_load_neither_torch_nor_sklearn(tmp_path):
    path = tmp_path / "log.db"
    with DecisionLog(path) as log:
        for row, _ in labelled_rows(30):
            log.record(row)
    result = subprocess.run([sys.executable, "-c", RUN, str(path), str(tmp_path / "out.jsonl")],
                            capture_output=True, text=True, check=True)
    report = json.loads(result.stderr.strip().splitlines()[-1])
    assert report["status"] == [0, 0]
    assert json.loads(result.stdout)["rows"] == 30
    loaded = {name.split(".")[0] for name in report["modules"]}
    assert not loaded & {"torch", "sklearn", "matplotlib", "training", "pyarrow"}
