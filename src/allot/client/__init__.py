"""The client protocol: what allot's own controllers do against one cluster, whatever serves it.

:mod:`allot.client.protocol` is the typed :class:`~allot.client.protocol.Client` (reads,
writes, server-side apply, subresources, watches through informers); its two
implementations are :class:`allot.registry.inprocess.InProcessClient` (the embedded
platform's registry, no HTTP) and :class:`allot.kube.remote.RemoteClient` (any API server,
through the official client). Both raise the errors of :mod:`allot.client.errors`, feed the
same :class:`~allot.client.dispatch.Dispatcher` (each controller its events after the write
committed, isolated from the others) and record Events with one
:class:`~allot.client.events.EventRecorder`. :mod:`allot.client.informers` keeps a remote
kind's cache current by list and watch (relisting after a gap);
:mod:`allot.client.leaderelection` is client-go's Lease lock. Nothing here imports the
registry, the store or an HTTP library: controllers written against this package run on
both engines unchanged.
"""
