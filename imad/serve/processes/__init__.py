"""The processes of `imad serve`: on top of the app, and imported by nothing that serves a request.

- `server`: binding the port and running the app under uvicorn (foreground, `--workers N` under
  a supervisor whose SIGHUP reloads, or `BackgroundServer` in a thread).
- `worker`: the app of one `--workers` process, built from its environment.
- `http_protocol`: uvicorn's HTTP/1.1 protocol with an OpenAI-shaped 400 for malformed HTTP.
"""
