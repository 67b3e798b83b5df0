"""The routing server's endpoints, one FastAPI `APIRouter` per family, each in its own module:

- `chat`: `POST /v1/chat/completions` (over `imad.serve.chat_serving.ChatServing`).
- `models`: `GET /v1/models`, `GET /v1/models/{id}`.
- `stats`: `GET /v1/imad/stats` (the router, its trigger budgets, the decision log's counters).
- `feedback`: `POST /v1/imad/feedback` (an outcome label for a logged decision).
- `admin`: `POST /v1/imad/admin/reload` (hot reload of the router).
- `prometheus`: `GET /metrics` (Prometheus).
- `health`: `GET /health` (public).

`create_app` includes every router of `ROUTERS` behind the API key (`guard.require_bearer`)
unless all its paths are public (`guard.public_paths`). To add an endpoint: write it on the
router of its family (or a new module with `router = APIRouter()`, listed here); take the app's
parts with a parameter typed `Server` (`routes.state`); raise `ServeError` for a refusal. It is
guarded without further code; making it public means adding its path to `guard.ALWAYS_PUBLIC`.
"""

from __future__ import annotations

from fastapi import APIRouter

from imad.serve.routes import admin, chat, feedback, health, models, prometheus, stats

ROUTERS: tuple[APIRouter, ...] = (health.router, prometheus.router, stats.router, feedback.router,
                                  admin.router, models.router, chat.router)
