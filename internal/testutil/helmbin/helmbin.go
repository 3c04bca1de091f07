package helmbin

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

var (
	once sync.Once
	path string
	err  error
)

// Path returns the Helm CLI's path, building it once per process.
func Path() (string, error) {
	once.Do(func() {
		if p := os.Getenv("DOVETAIL_HELM"); p != "" {
			path = p
			return
		}
		_, self, _, _ := runtime.Caller(0)
		cmd := exec.Command("go", "run", "./cmd/build-helm")
		cmd.Dir = filepath.Join(filepath.Dir(self), "..", "..", "..", "tools", "helm")
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, runErr := cmd.Output()
		if runErr != nil {
			err = fmt.Errorf("building helm: %v\n%s", runErr, stderr.String())
			return
		}
		path = strings.TrimSpace(string(out))
	})
	return path, err
}

// NodeMemory is the allocatable memory DeploymentEnv gives the node its pod
// runs on (what limits.memory resolves to without a limit).
const NodeMemory int64 = 8 << 30

// DeploymentEnv returns the environment of the first container of the
// first Deployment in a rendered manifest, with the downward API resolved
// as the kubelet does: metadata.namespace is namespace, requests.cpu is
// the request in the divisor's units (0 without one), limits.memory is the
// limit in bytes, NodeMemory without one.
func DeploymentEnv(manifest []byte, namespace string) (map[string]string, error) {
	for _, doc := range strings.Split(string(manifest), "\n---") {
		var d appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil || d.Kind != "Deployment" {
			continue
		}
		c := d.Spec.Template.Spec.Containers[0]
		env := map[string]string{}
		for _, e := range c.Env {
			switch from := e.ValueFrom; {
			case from == nil:
				env[e.Name] = e.Value
			case from.FieldRef != nil && from.FieldRef.FieldPath == "metadata.namespace":
				env[e.Name] = namespace
			case from.ResourceFieldRef != nil && from.ResourceFieldRef.ContainerName != c.Name:
				return nil, fmt.Errorf("env %s: resourceFieldRef names container %q, the container is %q", e.Name, from.ResourceFieldRef.ContainerName, c.Name)
			case from.ResourceFieldRef != nil && from.ResourceFieldRef.Resource == "requests.cpu":
				q := c.Resources.Requests[corev1.ResourceCPU]
				div := from.ResourceFieldRef.Divisor
				if div.IsZero() {
					div = resource.MustParse("1")
				}
				env[e.Name] = strconv.FormatInt((q.MilliValue()+div.MilliValue()-1)/div.MilliValue(), 10)
			case from.ResourceFieldRef != nil && from.ResourceFieldRef.Resource == "limits.memory":
				q, ok := c.Resources.Limits[corev1.ResourceMemory]
				if !ok {
					env[e.Name] = strconv.FormatInt(NodeMemory, 10)
				} else {
					env[e.Name] = strconv.FormatInt(q.Value(), 10)
				}
			default:
				return nil, fmt.Errorf("env %s: a valueFrom this helper does not resolve: %+v", e.Name, from)
			}
		}
		return env, nil
	}
	return nil, fmt.Errorf("no Deployment in the manifest")
}
