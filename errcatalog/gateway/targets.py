"""Where an HTTP upstream points: whether its host is one of this machine's or its network's own addresses.

An upstream's URL makes the serving processes send requests from inside the network, and parts of the answers come
back to staff (a connection test, health). Loopback, link-local, private and other non-global addresses are
therefore for superusers to choose, or for a deployment that allows them (``GATEWAY["ALLOW_PRIVATE"]``).
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit


def private_target(url: str) -> bool:
    """True when the URL's host is, or resolves to, at least one address that is not globally reachable.

    Every address the name resolves to is checked (an attacker's name may hold a public and a private one), and an
    IPv6 address that carries an IPv4 one (``_carried_ipv4``) counts as the IPv4 address it carries. A name that
    does not resolve here has no address to reach and is not private; it is checked again when it is tested.
    """
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return False
    if not host:
        return False
    try:
        infos = socket.getaddrinfo(host, port or (443 if parts.scheme == "https" else 80), type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return False
    return any(_private(info[4][0]) for info in infos)


# NAT64's well-known prefix (RFC 6052): a gateway on the path turns 64:ff9b::a.b.c.d into a.b.c.d.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
# The local-use NAT64 prefix (RFC 8215), translated inside the network that runs it; Python before 3.12.4 calls it
# global.
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")


def _private(address: object) -> bool:
    try:
        ip = ipaddress.ip_address(str(address).split("%", 1)[0])
    except ValueError:
        return True  # not an address we can judge: as careful as a private one
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _LOCAL_NAT64:
            return True
        carried = _carried_ipv4(ip)
        if carried is not None:
            return _private(carried)
    return not ip.is_global or ip.is_multicast


def _carried_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address delivers to, where its form carries one: IPv4-mapped (``::ffff:a.b.c.d``),
    IPv4-compatible (``::a.b.c.d``, which some stacks still route over IPv4), NAT64 (``64:ff9b::a.b.c.d``) and 6to4
    (``2002:AABB:CCDD::``, whose relay sends to a.b.c.d). Python judges the last three by their IPv6 prefix, which
    is global, so ``::7f00:1`` would pass for a public address while it reaches 127.0.0.1."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64 or int(ip) >> 32 == 0:
        return ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF)
    return None
