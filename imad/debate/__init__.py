"""Multi-agent debate back-ends behind one interface.

`create_backend(name, model, **config)` → `backend.run(question, seed_response=None)` →
`DebateResult` (final answer, per-round answers, full call trace, tokens, messages, stop reason).
Back-ends: "acemad", "svrmad" (the escalation targets) and the baselines "cot",
"self_consistency", "mad" (Du et al.), "liang" (Liang et al.), "down".
"""

from imad.debate.acemad import AceMAD, AceMADConfig
from imad.debate.base import AgentConfig, DebateBackend
from imad.debate.down import DOWN, DOWNConfig
from imad.debate.liang import LiangConfig, LiangMAD
from imad.debate.mad import MAD, MADConfig
from imad.debate.registry import BACKENDS, create_backend, make_config
from imad.debate.result import DebateCall, DebateResult
from imad.debate.single import CoT, CoTConfig, SelfConsistency, SelfConsistencyConfig
from imad.debate.svrmad import SVRMAD, SVRMADConfig

__all__ = [
    "BACKENDS", "DOWN", "MAD", "SVRMAD", "AceMAD", "AceMADConfig", "AgentConfig", "CoT",
    "CoTConfig", "DOWNConfig", "DebateBackend", "DebateCall", "DebateResult", "LiangConfig",
    "LiangMAD", "MADConfig", "SVRMADConfig", "SelfConsistency", "SelfConsistencyConfig",
    "create_backend", "make_config",
]
