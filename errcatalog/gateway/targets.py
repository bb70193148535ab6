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
    IPv4 address mapped into IPv6 counts as the IPv4 address it carries. A name that does not resolve here has no
    address to reach and is not private; it is checked again when it is tested.
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


def _private(address: object) -> bool:
    try:
        ip = ipaddress.ip_address(str(address).split("%", 1)[0])
    except ValueError:
        return True  # not an address we can judge: as careful as a private one
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not ip.is_global or ip.is_multicast
