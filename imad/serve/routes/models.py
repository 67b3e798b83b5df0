"""`GET /v1/models` and `GET /v1/models/{id}`: the servable model names (`imad.serve.openai.model_names`);
any τ suffix of a listed name is retrievable, anything else is a 404."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from imad.serve.openai.model_names import listed_model_names, parse_model_name
from imad.serve.openai.protocol import ModelCard, ModelList
from imad.serve.routes.state import Server

router = APIRouter()


@router.get("/v1/models")
async def list_models(server: Server) -> dict[str, Any]:
    cards = [ModelCard(id=name, created=server.started) for name in listed_model_names()]
    return ModelList(data=cards).model_dump()


@router.get("/v1/models/{model_id}")
async def retrieve_model(model_id: str, server: Server) -> dict[str, Any]:
    settings = server.settings
    parse_model_name(model_id, default_backend=settings.default_backend, default_tau=settings.default_tau)
    return ModelCard(id=model_id, created=server.started).model_dump()
