"""The embedded Kubernetes-compatible API server (host cluster plus virtual clusters).

Public surface: :class:`ApiServer` (store, tokens, admission, ASGI app) and
:func:`allot.apiserver.server.serve` (TLS on loopback with uvicorn).
"""
