"""docs/reference/prometheus.md documents every metric ``GET /metrics`` exposes, with its labels and type, and no
metric that is not exposed."""

from __future__ import annotations

import re

import pytest
from prometheus_client.parser import text_string_to_metric_families

from errcatalog.gateway import inbox
from errcatalog.outcomes import prometheus
from errcatalog.outcomes.events import OutcomeEvent
from tests.docs.reference_pages import REFERENCE_DIR

PAGE = REFERENCE_DIR / "prometheus.md"


def documented() -> dict[str, list[str]]:
    """Each metric table row by its metric name: the row's cells."""
    rows = {}
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        found = re.match(r"\| `([a-z_]+)` \|", line)
        if found:
            rows[found[1]] = [cell.strip() for cell in line.strip().strip("|").split("|")]
    return rows


def sample_name(family) -> str:
    """The name a reader sees and queries: a counter's ``_total`` series, any other family's own name."""
    return f"{family.name}_total" if family.type == "counter" else family.name


@pytest.fixture
def exposed(transactional_db):
    """The families of a scrape in which a failed call, an upstream's failure and a relayed prompt were counted, so
    every labelled metric has a sample (the serving process imports the inbox with its pipeline)."""
    inbox.note("web", "web__get", "tool_error", "Widget 1 exploded", classified=False)
    inbox.reset()
    prometheus.observe_upstream_request("web", "prompts/get", code="INTERNAL_ERROR")
    prometheus.observe_call(
        OutcomeEvent(tool="send_email", outcome="error", code="MISSING_PARAMETER", interactive=True, latency_ms=3.0),
        served=True,
    )
    return list(text_string_to_metric_families(prometheus.exposition().decode()))


def test_every_exposed_metric_is_documented_with_its_type_and_labels(exposed):
    rows = documented()
    for family in exposed:
        name = sample_name(family)
        assert name in rows, f"{name} is exposed but not in docs/reference/prometheus.md"
        if not family.name.startswith("errcatalog_"):
            continue
        _, kind, labels, _meaning = rows[name]
        assert kind == family.type, f"{name}: the page says {kind}, the code exposes a {family.type}"
        exposed_labels = {label for sample in family.samples for label in sample.labels if label != "le"}
        assert set(re.findall(r"`([a-z_]+)`", labels)) == exposed_labels, f"{name}: labels {sorted(exposed_labels)}"


def test_the_page_documents_no_metric_that_is_not_exposed(exposed):
    names = {sample_name(family) for family in exposed}
    for name in documented():
        assert name in names, f"docs/reference/prometheus.md documents {name}, which /metrics does not expose"
