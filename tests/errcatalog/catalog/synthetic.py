"""A catalog of any size, for tests and benchmarks of scale: the shipped default catalog plus synthetic codes.

Each synthetic code is a copy of NETWORK_ERROR named ``SYNTH_00001_ERROR``… with ``variants`` variants (``v0``…) of
distinct wording, so that every row is really written and every snapshot entry really built.
"""

from __future__ import annotations

import copy

from errcatalog.catalog.defaults import DEFAULT_CATALOG_PATH
from errcatalog.catalog.document import read_catalog_file


def synthetic_document(codes: int, variants: int = 5, *, wording: str = "wording") -> dict:
    """The default catalog plus ``codes`` codes of ``variants`` variants each; ``wording`` varies their text."""
    document = read_catalog_file(DEFAULT_CATALOG_PATH)
    template = next(c for c in document["codes"] if c["code"] == "NETWORK_ERROR")
    for i in range(codes):
        code = copy.deepcopy(template)
        code.update(code=f"SYNTH_{i:05d}_ERROR", jsonrpc_code=None, http_statuses=[])
        first = code["variants"][0]
        code["variants"] = [
            {**first, "name": f"v{j}", "message": f"Synthetic failure {i}, {wording} {j}: the request to {{service}} "
             "failed."}
            for j in range(variants)
        ]  # fmt: skip
        document["codes"].append(code)
    return document
