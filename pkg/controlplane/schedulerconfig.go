package controlplane

import (
	"fmt"

	"sigs.k8s.io/yaml"
)

// SchedulerConfigFor returns the KubeSchedulerConfiguration kube-scheduler
// runs with: the built-in one for an empty user, else user with
// clientConnection.kubeconfig set to kubeconfig (the file a kind or
// kubeadm cluster names does not exist here), the built-in client rate
// where user sets none, and leader election off (one scheduler). user must
// be a kubescheduler.config.k8s.io KubeSchedulerConfiguration; the rest is
// kept as given, for kube-scheduler to validate when it starts.
func SchedulerConfigFor(user []byte, kubeconfig string) ([]byte, error) {
	if len(user) == 0 {
		return fmt.Appendf(nil, schedulerConfig, kubeconfig), nil
	}
	var doc map[string]any
	if err := yaml.Unmarshal(user, &doc); err != nil {
		return nil, fmt.Errorf("scheduler configuration: %w", err)
	}
	if doc == nil {
		return nil, fmt.Errorf("scheduler configuration: empty document")
	}
	if kind, _ := doc["kind"].(string); kind != "KubeSchedulerConfiguration" {
		return nil, fmt.Errorf("scheduler configuration: kind %q, want KubeSchedulerConfiguration", kind)
	}
	if v, _ := doc["apiVersion"].(string); v != "kubescheduler.config.k8s.io/v1" {
		return nil, fmt.Errorf("scheduler configuration: apiVersion %q, want kubescheduler.config.k8s.io/v1", v)
	}
	cc, _ := doc["clientConnection"].(map[string]any)
	if cc == nil {
		cc = map[string]any{}
	}
	cc["kubeconfig"] = kubeconfig
	if _, ok := cc["qps"]; !ok {
		cc["qps"] = 500
	}
	if _, ok := cc["burst"]; !ok {
		cc["burst"] = 1000
	}
	doc["clientConnection"] = cc
	le, _ := doc["leaderElection"].(map[string]any)
	if le == nil {
		le = map[string]any{}
	}
	le["leaderElect"] = false
	doc["leaderElection"] = le
	return yaml.Marshal(doc)
}
