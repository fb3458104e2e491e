"""The allot test suite; scenario data lives in tests/scenarios, examples in examples/."""
