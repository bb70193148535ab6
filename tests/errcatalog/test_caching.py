"""Per-process caches: bounded in size and age, cleared by scope through one signal, all reset between tests."""

from __future__ import annotations

import threading
from functools import lru_cache

import pytest

import mcpserver.pipeline  # noqa: F401  (with the catalog document, imports every module that declares a cache)
from errcatalog import caching
from errcatalog.caching import (
    BoundedCache,
    caches_invalidate,
    caches_invalidated,
    caches_reset,
    process_cache,
    register_cache,
    registered_caches,
)
from errcatalog.catalog.snapshot import catalog_changed

_CATALOG = process_cache("tests.caching.catalog", scope="catalog", max_entries=8)
_TOKENS = process_cache("tests.caching.tokens", scope="tokens", max_entries=8)
_PROCESS = process_cache("tests.caching.process", scope="process", max_entries=8)


@lru_cache(maxsize=8)
def _square(n: int) -> int:
    return n * n


register_cache("tests.caching.square", _square.cache_clear)


def _fill_all() -> None:
    for cache in (_CATALOG, _TOKENS, _PROCESS):
        cache.set("key", "value")
    _square(3)


def test_a_full_cache_starts_over_empty():
    cache: BoundedCache[int, str] = BoundedCache("full", max_entries=3)
    for n in range(3):
        cache.set(n, str(n))
    cache.set(1, "one")  # replacing an entry never counts as growing
    assert len(cache) == 3 and cache.get(1) == "one"
    cache.set(3, "3")
    assert len(cache) == 1
    assert cache.get(0) is None and cache.get(3) == "3"


def test_the_bound_holds_when_threads_write_at_once():
    cache: BoundedCache[tuple[int, int], int] = BoundedCache("threads", max_entries=50)
    sizes_seen: set[int] = set()

    def write(thread: int) -> None:
        for n in range(2000):
            cache.set((thread, n), n)
            sizes_seen.add(len(cache))

    threads = [threading.Thread(target=write, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert max(sizes_seen) <= 50
    assert 0 < len(cache) <= 50


def test_an_entry_older_than_max_age_is_not_served_but_its_age_is_known(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(caching.time, "monotonic", lambda: now[0])
    cache: BoundedCache[str, str] = BoundedCache("aged", max_entries=8, max_age=5.0)
    cache.set("key", "value")
    now[0] += 4.9
    assert cache.get("key") == "value"
    now[0] += 0.1
    assert cache.get("key") is None
    assert cache.get_with_age("key") == ("value", pytest.approx(5.0))
    assert cache.get_with_age("other") is None


def test_an_unhashable_key_raises_type_error_as_a_dict_does():
    with pytest.raises(TypeError):
        BoundedCache("unhashable", max_entries=8).get(["a", "list"])


@pytest.mark.parametrize("scope", ["catalog", "tokens", "process"])
def test_the_signal_clears_exactly_the_caches_of_its_scope(scope):
    of_scope = {"catalog": _CATALOG, "tokens": _TOKENS, "process": _PROCESS}
    _fill_all()
    caches_invalidate(scope=scope)
    for cache_scope, cache in of_scope.items():
        assert (cache.get("key") is None) is (cache_scope == scope)
    assert _square.cache_info().currsize == (0 if scope == "process" else 1)


def test_the_signal_reaches_receivers_of_our_own():
    seen = []

    def receiver(sender, *, scope, **kwargs):
        seen.append(scope)

    caches_invalidated.connect(receiver)
    try:
        caches_invalidate(scope="tokens")
    finally:
        caches_invalidated.disconnect(receiver)
    assert seen == ["tokens"]


def test_reset_clears_every_registered_cache_of_every_scope():
    _fill_all()
    caches_reset()
    assert all(cache.get("key") is None for cache in (_CATALOG, _TOKENS, _PROCESS))
    assert _square.cache_info().currsize == 0


def test_a_name_is_registered_once():
    with pytest.raises(ValueError, match="already registered"):
        process_cache("tests.caching.catalog", scope="process", max_entries=1)


def test_every_per_process_cache_of_the_product_is_registered():
    assert {
        "errcatalog.catalog.snapshot.held": "process",
        "errcatalog.catalog.document.schema": "process",
        "errcatalog.render.classify.type_facts": "process",
        "errcatalog.safety.static_texts": "process",
        "errcatalog.safety.template_sentences": "process",
        "mcpserver.auth.accepted_keys": "tokens",
        "mcpserver.auth.checks_in_flight": "tokens",
        "mcpserver.jsonrpc_errors.sanctioned": "process",
        "mcpserver.pipeline.tool_results": "catalog",
        "mcpserver.pipeline.tracebacks_logged": "process",
        "mcpserver.sdk_internals.wire.forms": "catalog",
        "mcpserver.ratelimit.local_windows": "process",
        "mcpserver.validation.plain_schemas": "process",
        "mcpserver.validation.validators": "process",
    }.items() <= registered_caches().items()


def test_a_catalog_edit_in_this_process_clears_the_catalog_caches():
    _fill_all()
    catalog_changed()
    assert _CATALOG.get("key") is None
    assert _TOKENS.get("key") == "value" and _PROCESS.get("key") == "value"


@pytest.mark.django_db
def test_saving_or_deleting_a_client_token_clears_the_token_caches(django_user_model):
    from errcatalog.access.tokens import client_token_create

    owner = django_user_model.objects.create_user(username="owner", password="pw")
    _fill_all()
    token, _key = client_token_create(user=owner, name="cache test")
    assert _TOKENS.get("key") is None
    assert _CATALOG.get("key") == "value" and _PROCESS.get("key") == "value"
    _TOKENS.set("key", "value")
    token.delete()
    assert _TOKENS.get("key") is None


@pytest.mark.django_db
def test_noting_when_a_token_was_last_used_keeps_the_token_caches(django_user_model):
    # A check of a key notes its use (client_token_authenticate); that decides nothing a check decides.
    from errcatalog.access.tokens import client_token_authenticate, client_token_create, client_token_revoke

    owner = django_user_model.objects.create_user(username="owner", password="pw")
    token, key = client_token_create(user=owner, name="cache test")
    _TOKENS.set("key", "value")
    assert client_token_authenticate(key) is not None
    token.refresh_from_db()
    assert token.last_used_at is not None
    assert _TOKENS.get("key") == "value"
    client_token_revoke(token=token)  # any other save still clears them
    assert _TOKENS.get("key") is None
