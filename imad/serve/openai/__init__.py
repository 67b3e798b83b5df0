"""The OpenAI wire format of the routing server: what goes in and out of `/v1`.

- `protocol`: the request and response models of chat completions and `/v1/models`, and the
  `X-Imad-Decision` header.
- `model_names`: `imad[-BACKEND][-TAU]`, the model names that pick back-end and τ.
- `questions`: from a chat request to the `Question` the pipeline answers.
- `streaming`: a finished completion as server-sent events.
- `strict_json`: strict JSON in (request bodies) and out (bodies, headers, events, logs).
- `error_responses`: every error in OpenAI's shape.

Nothing here runs a pipeline or knows a process; the routes and `imad.serve.chat_serving` use it.
"""
