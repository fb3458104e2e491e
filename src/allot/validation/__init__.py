"""The API server's validation of the kinds allot serves, with Kubernetes' error texts.

Entry points live in :mod:`allot.validation.objects`; errors are
:class:`allot.validation.field.FieldError` lists. Pure: no I/O.
"""
