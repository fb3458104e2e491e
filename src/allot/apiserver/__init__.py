"""The HTTP face of the embedded platform: routing, discovery, OpenAPI, tables, watches, TLS.

:class:`allot.apiserver.app.ApiServer` serves a :class:`allot.registry.clusters.Registry`
(the write path) over HTTPS; :func:`allot.apiserver.server.serve` runs it with uvicorn on
loopback. Nothing below this layer imports it (an import-linter contract).
"""
