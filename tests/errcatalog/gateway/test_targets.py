"""Which upstream addresses count as this machine's or its network's own (``errcatalog.gateway.targets``)."""

from __future__ import annotations

import pytest

from errcatalog.gateway.targets import private_target


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "[::1]",
        "[::ffff:127.0.0.1]",  # IPv4-mapped
        "[::7f00:1]",  # IPv4-compatible
        "[::a00:1]",  # IPv4-compatible 10.0.0.1
        "[64:ff9b::7f00:1]",  # NAT64 to 127.0.0.1
        "[64:ff9b::a9fe:a9fe]",  # NAT64 to the cloud metadata address 169.254.169.254
        "[64:ff9b:1::7f00:1]",  # local-use NAT64
        "[2002:7f00:1::1]",  # 6to4 of 127.0.0.1
        "[2002:c0a8:1::1]",  # 6to4 of 192.168.0.1
        "[2001:0:4136:e378:8000:63bf:3fff:fdd2]",  # Teredo
        "[fd00::1]",
        "[fe80::1]",
    ],
)
def test_an_ipv6_form_of_a_loopback_or_private_address_is_private(host):
    assert private_target(f"http://{host}:9/mcp")


@pytest.mark.parametrize("host", ["8.8.8.8", "[2606:4700::1111]", "[64:ff9b::808:808]", "[2002:808:808::1]"])
def test_public_addresses_and_their_ipv6_forms_are_not(host):
    assert not private_target(f"http://{host}:9/mcp")
