"""What happens after every error: outcome events, retry episodes and the metrics rolled up from them (DESIGN §7).

- ``events``: the outcome event (``OutcomeEvent``, the one event type), its wire format (the Redis stream, the
  spool, the Celery fallback and the REST API). Pure.
- ``recorder``: the request-path side: a bounded in-process buffer flushed off the request path to Redis (or,
  without Redis, to the spool folder on Celery's filesystem broker). Never raises into a call. Sends Celery tasks
  by name: it never imports ``tasks``, which sits above it.
- ``spool``: the durable buffer without Redis: batch files, each deleted only after its events were stored.
- ``episodes``: the retry-episode rules, pure: plain events and episodes in, decisions out (open, retry, recover,
  exhaust, abandon). No Django, no database.
- ``episode_store``: the rules' database edge: loads open episodes, applies the rules, writes the decisions;
  closes abandoned episodes.
- ``ingest``: the worker side: reads the buffer in batches, inserts idempotently by event ID, links retries to
  the errors that caused them through ``episode_store``. ``bulk_sql`` holds the PostgreSQL bulk-write pieces both
  share.
- ``models``: what is stored: ``OutcomeRecord`` (a stored event), ``Episode``, the rollups.
- ``rollups`` and ``metrics`` (with ``stats``): per-bucket aggregates computed by Celery beat, and the numbers read
  from them by the dashboard and ``GET /api/v1/metrics/``.
- ``tasks``: the Celery tasks, thin wrappers over ``ingest``, ``episode_store`` and ``rollups``.

May import the kernel (``errcatalog.vocabulary``, ``errors``, ``safety``) and ``errcatalog.dependencies``; never
the catalog, access, web or the MCP server. Within the package the arrows go one way: ``tasks`` → ``ingest`` →
``episode_store`` → ``episodes`` → ``events``; ``recorder`` → ``spool``, ``events``; ``metrics`` → ``rollups`` →
``models`` → ``episodes`` (the ending values).
"""
