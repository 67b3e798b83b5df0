"""Hot reload of the router: another checkpoint in service without a restart.

- `swap`: one process's routers (`ServingRouters`): a checkpoint loaded and validated off the
  request path, then swapped in at once; requests in flight finish on the router they started with.
- `board`: how every process of one `imad serve` hears of a reload (SIGHUP, and under
  `--workers` the run's reload board that each worker follows).
- `acks`: each worker's answer to a reload on the board, so the worker that took
  `POST /v1/imad/admin/reload` can answer for all of them.

The route is `imad.serve.routes.admin`.
"""
