"""LLM back-ends behind one chat protocol."""

from imad.llm.types import ChatModel, ChatRequest, ChatResponse, Message, TokenLogprob, user_prompt

__all__ = ["ChatModel", "ChatRequest", "ChatResponse", "Message", "TokenLogprob", "user_prompt"]
