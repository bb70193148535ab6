"""What happens after every error: outcome events, retry episodes and the metrics rolled up from them (DESIGN §7).

- ``events``: the outcome event, its wire format (the Redis stream, the Celery fallback and the REST API).
- ``recorder``: the request-path side: a bounded in-process buffer flushed off the request path to Redis (or,
  without Redis, to the spool folder on Celery's filesystem broker). Never raises into a call.
- ``spool``: the durable buffer without Redis: batch files, each deleted only after its events were stored.
- ``ingest``: the worker side: reads the buffer in batches, inserts idempotently by event ID, links retries to
  the errors that caused them (episodes).
- ``rollups`` and ``metrics``: per-bucket aggregates computed by Celery beat, and the numbers read from them by
  the dashboard and ``GET /api/v1/metrics/``.
"""
