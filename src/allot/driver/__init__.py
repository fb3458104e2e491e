"""The simulated NVIDIA DRA driver: GPU models, NVML mapping, published slices."""
