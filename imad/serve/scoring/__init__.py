"""Scoring the answers of concurrent requests, outside the server's GIL.

- `batcher`: the answers of requests waiting at the same moment scored in one batch, on one of
  several lanes.
- `processes`: the child processes a lane hands its batches to, replaced when they die or hang.
- `lifeline`: every process of `imad serve` ends with the process that started it.
"""
