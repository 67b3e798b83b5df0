"""Bearer-token auth of the routing server: the key from its environment variable, compared in
constant time.

Which routes need the key is decided in `imad.serve.routes.guard` (all but a public list).
`hmac.compare_digest` keeps the comparison's time independent of where a guess first differs.
The key is read here, not in the CLI, because each `--workers` process reads it again.
"""

from __future__ import annotations

import hmac
import os

from imad.errors import ConfigError, ServeError

_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="imad"'}


def check_bearer(authorization: str | None, api_key: str | None) -> None:
    """Pass when no key is configured or the header carries it; else raise ServeError 401."""
    if api_key is None:
        return
    if not authorization:
        raise ServeError(401, "missing API key: send the header 'Authorization: Bearer <key>'",
                         type="authentication_error", code="missing_api_key", headers=_CHALLENGE)
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer":
        raise ServeError(401, "the Authorization header must read 'Bearer <key>'",  # never echo it
                         type="authentication_error", code="invalid_api_key", headers=_CHALLENGE)
    if not hmac.compare_digest(token.strip().encode("utf-8"), api_key.encode("utf-8")):
        raise ServeError(401, "incorrect API key", type="authentication_error",
                         code="invalid_api_key", headers=_CHALLENGE)


def api_key_from_env(variable: str | None) -> str | None:
    """The key named by --api-key-env; a named but unset variable is an error, not 'no auth'."""
    if variable is None:
        return None
    key = os.environ.get(variable, "")
    if not key.strip():
        raise ConfigError("--api-key-env", f"the environment variable {variable} is unset or empty; "
                                           "export the key first or drop --api-key-env")
    if key != key.strip() or not all(" " <= char <= "~" for char in key):  # never echo the key
        raise ConfigError("--api-key-env", f"the key in {variable} starts or ends with whitespace, or "
                                           "holds a control character (newline, tab, NUL…) or "
                                           "non-ASCII text: no client could send it in "
                                           "'Authorization: Bearer <key>', so every request would "
                                           "get 401; export a key of printable ASCII")
    return key
