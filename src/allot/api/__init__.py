"""Wire models of the Kubernetes API kinds allot serves (pure data, no I/O).

``resource_v1`` (DRA), ``core_v1`` (with Node and node selection in ``core_v1_nodes``),
``meta`` (ObjectMeta, Status), ``quantity`` and ``semver`` value types, ``kinds`` (the
served kinds and strict decoding), ``features`` (the 1.36 DRA gates).
"""
