"""The simulated AMD GPU DRA driver (ROCm ``k8s-gpu-dra-driver`` v1.0): models, slices, facts."""
