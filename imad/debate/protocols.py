"""The debate protocols a question can be handed to: name → (config class, back-end class).

`imad.debate.registry` adds DOWN, the gate that hands an unsure question to one of these; keeping
them in their own table lets DOWN check and build its inner back-end without importing the
registry that imports DOWN.
"""

from __future__ import annotations

from imad.debate.acemad import AceMAD, AceMADConfig
from imad.debate.base import AgentConfig, DebateBackend
from imad.debate.liang import LiangConfig, LiangMAD
from imad.debate.mad import MAD, MADConfig
from imad.debate.single import CoT, CoTConfig, SelfConsistency, SelfConsistencyConfig
from imad.debate.svrmad import SVRMAD, SVRMADConfig

PROTOCOLS: dict[str, tuple[type[AgentConfig], type[DebateBackend]]] = {
    "acemad": (AceMADConfig, AceMAD),
    "svrmad": (SVRMADConfig, SVRMAD),
    "cot": (CoTConfig, CoT),
    "self_consistency": (SelfConsistencyConfig, SelfConsistency),
    "mad": (MADConfig, MAD),
    "liang": (LiangConfig, LiangMAD),
}
