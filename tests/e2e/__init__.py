"""End-to-end tests: the real kubectl and the official Python client against allot."""
