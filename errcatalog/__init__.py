"""errcatalog: the catalog of error codes and the text it renders for models and people (see ARCHITECTURE.md).

Domains, each a sub-package that says what it owns and what it may import: ``catalog`` (codes, wording, hints,
rules; the one write path; import and export; the per-process snapshot; admin), ``render`` (pure: the snapshot's
plain data, classification, every rendered face), ``outcomes`` (events, recording, episodes, rollups, metrics),
``access`` (client tokens) and ``web`` (dashboard and REST API). The kernel modules ``vocabulary``, ``errors`` and
``safety`` are pure and import nothing of ours; ``dependencies`` tracks Redis and PostgreSQL outages.
"""
