"""Fair sharing between tenants: the pure admission and preemption engine.

Tenants of one cohort each have a guaranteed share of some resources (devices of a
DeviceClass, or bytes of GPU memory), may borrow what other members leave idle and lend
of their own, and take their guarantee back by preempting borrowers; the semantics are
Kueue's ClusterQueues in a cohort (``model`` says where allot differs). ``model`` holds
the inputs (queues, workloads), ``books`` the usage arithmetic and the waiting messages,
``preemption`` the choice of victims and ``cycle`` one admission pass. No I/O: the
platform's admission controller (:mod:`allot.tenancy.queueing`) and the trace simulator
(:mod:`allot.simulation.traces`) call :func:`cycle.admission_cycle` with what they read.
"""
