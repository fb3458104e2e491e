"""The host control plane's controllers: claims from templates, the scheduler, node agents.

They run in the API server's event loop (:mod:`allot.controllers.runtime`), react to store
events, and write through the API handlers like any client.
"""
