package rbac

import (
	"bytes"
	"fmt"
	"io/fs"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// Defaults of the checked-in manifests: what Manifests returns and what
// `dovetail controller` uses without --leader-election-name/-namespace.
const (
	DefaultNamespace      = "kube-system"
	DefaultName           = "dovetail"
	DefaultLeaseName      = "dovetail-leader-election"
	DefaultLeaseNamespace = DefaultNamespace
)

// Params place the manifests: the ServiceAccount's namespace and name (also
// the name of the roles and bindings), and the leader-election Lease the
// controller runs with (--leader-election-name, --leader-election-namespace).
// Empty fields take the defaults.
type Params struct {
	Namespace, Name           string
	LeaseName, LeaseNamespace string
}

func (p Params) withDefaults() Params {
	if p.Namespace == "" {
		p.Namespace = DefaultNamespace
	}
	if p.Name == "" {
		p.Name = DefaultName
	}
	if p.LeaseName == "" {
		p.LeaseName = DefaultLeaseName
	}
	if p.LeaseNamespace == "" {
		p.LeaseNamespace = p.Namespace
	}
	return p
}

// Objects are the manifests as typed objects.
type Objects struct {
	ServiceAccount     *corev1.ServiceAccount
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	// Role and RoleBinding live in the Lease's namespace and let the
	// ServiceAccount create Leases there and change only the named one.
	Role        *rbacv1.Role
	RoleBinding *rbacv1.RoleBinding
}

// Parse reads the checked-in manifests into typed objects.
func Parse() (*Objects, error) {
	var o Objects
	targets := map[string]any{
		"serviceaccount.yaml":     &o.ServiceAccount,
		"clusterrole.yaml":        &o.ClusterRole,
		"clusterrolebinding.yaml": &o.ClusterRoleBinding,
		"role.yaml":               &o.Role,
		"rolebinding.yaml":        &o.RoleBinding,
	}
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		t, ok := targets[n]
		if !ok {
			return nil, fmt.Errorf("config/rbac/%s: a file Render does not know; add it to Parse", n)
		}
		data, err := files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		if err := yaml.UnmarshalStrict(data, t); err != nil {
			return nil, fmt.Errorf("config/rbac/%s: %w", n, err)
		}
	}
	if o.ServiceAccount == nil || o.ClusterRole == nil || o.ClusterRoleBinding == nil || o.Role == nil || o.RoleBinding == nil {
		return nil, fmt.Errorf("config/rbac: a manifest is missing (want %d files)", len(targets))
	}
	return &o, nil
}

// Render returns the manifests placed by p: every namespace, name,
// binding subject and the Role's lease name follow p, the rules do not
// change. Render(Params{}) is equivalent to Manifests.
func Render(p Params) ([]byte, error) {
	p = p.withDefaults()
	o, err := Parse()
	if err != nil {
		return nil, err
	}
	o.ServiceAccount.Namespace, o.ServiceAccount.Name = p.Namespace, p.Name
	o.ClusterRole.Name = p.Name
	o.ClusterRoleBinding.Name = p.Name
	o.ClusterRoleBinding.RoleRef.Name = p.Name
	o.Role.Namespace, o.Role.Name = p.LeaseNamespace, p.Name
	leaseRules := 0
	for i, r := range o.Role.Rules {
		if len(r.ResourceNames) > 0 && slices.Contains(r.Resources, "leases") {
			o.Role.Rules[i].ResourceNames = []string{p.LeaseName}
			leaseRules++
		}
	}
	if leaseRules != 1 {
		return nil, fmt.Errorf("config/rbac/role.yaml: %d rules name a lease, want exactly 1", leaseRules)
	}
	o.RoleBinding.Namespace, o.RoleBinding.Name = p.LeaseNamespace, p.Name
	o.RoleBinding.RoleRef.Name = p.Name
	for _, b := range [][]rbacv1.Subject{o.ClusterRoleBinding.Subjects, o.RoleBinding.Subjects} {
		for i := range b {
			b[i].Namespace, b[i].Name = p.Namespace, p.Name
		}
	}
	docs := []any{o.ClusterRole, o.ClusterRoleBinding, o.Role, o.RoleBinding, o.ServiceAccount}
	var b bytes.Buffer
	for _, d := range docs {
		data, err := yaml.Marshal(d)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	return b.Bytes(), nil
}

// FileNames lists the manifests' file names, sorted.
func FileNames() []string {
	names, _ := fs.Glob(files, "*.yaml")
	sort.Strings(names)
	return names
}

// File returns one manifest's bytes.
func File(name string) ([]byte, error) { return files.ReadFile(name) }
