"""Model names of the routing server: `imad[-BACKEND][-TAU]` picks back-end and τ per request.

`imad` is the server's default back-end and threshold; `imad-acemad` and `imad-svrmad` choose the
debate back-end; a trailing number sets τ for that request, e.g. `imad-svrmad-0.7` (escalate when
p < 0.7), `imad-acemad-0` (keep every scored answer) or `imad-acemad-1` (always escalate). Clients
that can only name a model (every OpenAI SDK) can thus steer the router without extra fields.

τ = 0 turns off the router's score threshold, not the fail-safe rule: a self-critique
that could not be parsed, was truncated or failed has no answer to keep, and a non-finite score
is no score, so those still escalate to the debate, whatever τ is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from imad.errors import ConfigError, ServeError
from imad.routing_options import check_tau

SERVE_BACKENDS = ("acemad", "svrmad")
"""The debate back-ends a model name may select."""

MODEL_PREFIX = "imad"
_MODEL_NAME = re.compile(r"^imad(?:-(?P<backend>[a-z_]+))?(?:-(?P<tau>[0-9]+(?:\.[0-9]+)?))?$")


@dataclass(frozen=True)
class ModelChoice:
    """What a model name asks for. `tau=None` means the router checkpoint's own τ."""

    name: str
    backend: str
    tau: float | None


def listed_model_names() -> list[str]:
    """The names /v1/models lists (any τ suffix is accepted on top of these)."""
    return [MODEL_PREFIX, *(f"{MODEL_PREFIX}-{backend}" for backend in SERVE_BACKENDS)]


def parse_model_name(name: str, *, default_backend: str, default_tau: float | None) -> ModelChoice:
    """The back-end and τ a model name selects.

    Raises ServeError 404 (`model_not_found`) for a name that is not `imad[-BACKEND][-TAU]` or
    names an unknown back-end, and 400 for a τ outside [0, 1].
    """
    match = _MODEL_NAME.match(name.strip())
    backend = match and (match.group("backend") or default_backend)
    if match is None or backend not in SERVE_BACKENDS:
        raise ServeError(404, f"the model {name!r} does not exist; use one of "
                              f"{', '.join(listed_model_names())}, optionally with a threshold suffix "
                              "such as imad-svrmad-0.7", code="model_not_found", param="model")
    tau_text = match.group("tau")
    if tau_text is None:
        return ModelChoice(name, backend, default_tau)
    try:
        tau = check_tau(float(tau_text))
    except ConfigError:
        raise ServeError(400, f"the threshold in model {name!r} must be in [0, 1], got {tau_text}",
                         code="invalid_threshold", param="model") from None
    return ModelChoice(name, backend, tau)
