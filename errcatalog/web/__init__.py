"""The web layer: the staff dashboard and the REST API (``/dashboard/``, ``/api/v1/``).

Adapters only: parse a request, call one service or selector of a domain (catalog, outcomes, access), answer.
May import every domain of ``errcatalog``; no domain imports it.
"""
