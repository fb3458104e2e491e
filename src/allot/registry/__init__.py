"""The write path of every cluster the platform serves, with no HTTP in it.

``clusters.Registry`` holds one data directory's store, tokens and admission chain;
``handlers`` implements the REST verbs on it; ``admission``, ``policies``, ``quota`` and
``classwarnings`` are the admission plugins; ``resources`` and ``crds`` say what is served;
``patching``, ``selectors`` and ``bodies`` are the request parts every verb shares.
:mod:`allot.apiserver` routes HTTP requests here; controllers, tenancy and operations
write here directly, never through the HTTP layer.
"""

from allot.client.protocol import HOST_CLUSTER as HOST_CLUSTER
