// Fetches the Prometheus Operator's module for `make kube` (allot.kubeengine.build): nothing
// is built; its PrometheusRule CRD (example/prometheus-operator-crd) is copied beside the
// cache, so that the tests hold allot's rendered PrometheusRule (rendered/20-prometheusrule.yaml)
// against a real API server. Only go.sum's two lines pin it: `go mod download` fetches this
// one module, not its dependencies.
module allot.local/tools/kube/prometheus-operator

go 1.26.0

require github.com/prometheus-operator/prometheus-operator v0.85.0
