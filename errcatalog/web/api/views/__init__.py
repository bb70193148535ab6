"""REST API views, a module per domain: the catalog's rows (``catalog``), the render preview (``render``),
classification (``classify``), metrics and outcome reports (``outcomes``), the API's root and unknown paths
(``root``), and the error answers and body check they share (``errors``).
"""
