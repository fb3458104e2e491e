"""Benchmarks run by ``make bench``; each prints measured figures and ratios to targets."""
