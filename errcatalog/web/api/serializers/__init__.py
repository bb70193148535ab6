"""Request and response shapes of the REST API, a module per domain: the catalog's rows (``catalog``), the render
preview (``render``), classification (``classify``), metrics and outcome reports (``outcomes``), the error answer
every endpoint gives (``errors``) and what every request serializer shares (``request_fields``).
"""
