"""The ``allot`` command line: thin wrappers that parse arguments and print results."""
