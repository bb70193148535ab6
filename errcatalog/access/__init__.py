"""Access: client tokens, the bearer keys of the REST API and the MCP endpoint.

Owns the ``ClientToken`` model, the token service (create, authenticate, revoke: only a hash of a key is kept)
and its admin page. May import the kernel (``errcatalog.vocabulary``); no other domain.
"""
