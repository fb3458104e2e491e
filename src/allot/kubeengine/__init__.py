"""The real engine: Kubernetes 1.36 itself (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, kwok) run on loopback as allot's host cluster, for ``allot up --engine
kubernetes`` and the tests that check allot against upstream. It builds its binaries
(``build``), finds and checks them (``binaries``), makes the cluster's certificates and
kubeconfigs, supervises the processes and publishes the fleet through the official client.
"""
