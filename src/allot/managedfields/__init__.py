"""Field ownership of server-side apply, as Kubernetes' structured-merge-diff defines it.

Pure (no I/O): field sets and their ``fieldsV1`` encoding (:mod:`.fieldpaths`), the type
description of a kind (list types, map keys, atomic structs: :mod:`.schema`), the walks
over objects that build field sets, compare, merge and remove (:mod:`.typed`) and the
bookkeeping of ``metadata.managedFields`` for Update and Apply operations with conflicts
(:mod:`.managers`). :mod:`allot.registry.handlers` calls :mod:`.managers` on every write.
"""
