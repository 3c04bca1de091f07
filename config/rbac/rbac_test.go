package rbac_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/dovetail-sh/dovetail/config/rbac"
)

// TestManifestsHoldEveryFile: the embedded stream carries every YAML file
// of the directory, byte for byte.
func TestManifestsHoldEveryFile(t *testing.T) {
	got := rbac.Manifests()
	names, err := filepath.Glob("*.yaml")
	if err != nil || len(names) == 0 {
		t.Fatalf("no YAML files found: %v", err)
	}
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(got, data) {
			t.Errorf("the manifests lack %s", n)
		}
	}
	if docs := strings.Count(string(got), "---\n"); docs != len(names) {
		t.Errorf("%d documents for %d files", docs, len(names))
	}
}

// TestRenderPlacesTheLease: the Role and its binding move to the lease's
// namespace and name only that lease, the subjects follow the
// ServiceAccount, and the rules are untouched.
func TestRenderPlacesTheLease(t *testing.T) {
	out, err := rbac.Render(rbac.Params{Namespace: "dovetail", Name: "dt", LeaseName: "my-lease", LeaseNamespace: "leases"})
	if err != nil {
		t.Fatal(err)
	}
	var docs []map[string]any
	for _, d := range strings.Split(string(out), "---\n") {
		if strings.TrimSpace(d) == "" {
			continue
		}
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, m)
	}
	if len(docs) != 5 {
		t.Fatalf("%d documents, want 5", len(docs))
	}
	defaults, err := rbac.Parse()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		meta := d["metadata"].(map[string]any)
		kind := d["kind"].(string)
		if meta["name"] != "dt" {
			t.Errorf("%s named %v, want dt", kind, meta["name"])
		}
		switch kind {
		case "Role", "RoleBinding":
			if meta["namespace"] != "leases" {
				t.Errorf("%s in %v, want the lease's namespace", kind, meta["namespace"])
			}
		case "ServiceAccount":
			if meta["namespace"] != "dovetail" {
				t.Errorf("ServiceAccount in %v", meta["namespace"])
			}
		}
		if subs, ok := d["subjects"].([]any); ok {
			for _, s := range subs {
				s := s.(map[string]any)
				if s["namespace"] != "dovetail" || s["name"] != "dt" {
					t.Errorf("%s subject %v", kind, s)
				}
			}
		}
		if kind == "Role" {
			rules := d["rules"].([]any)
			if len(rules) != len(defaults.Role.Rules) {
				t.Fatalf("%d Role rules, want %d", len(rules), len(defaults.Role.Rules))
			}
			named := 0
			for _, r := range rules {
				if rn, ok := r.(map[string]any)["resourceNames"]; ok && slices.Contains(r.(map[string]any)["resources"].([]any), any("leases")) {
					named++
					if len(rn.([]any)) != 1 || rn.([]any)[0] != "my-lease" {
						t.Errorf("the Role names %v, want [my-lease]", rn)
					}
				}
			}
			if named != 1 {
				t.Errorf("%d rules name a lease", named)
			}
		}
		if kind == "ClusterRole" && len(d["rules"].([]any)) != len(defaults.ClusterRole.Rules) {
			t.Errorf("ClusterRole rules changed")
		}
	}
}

// TestRenderDefaultsAreTheFiles: with no parameters Render says what the
// checked-in files say.
func TestRenderDefaultsAreTheFiles(t *testing.T) {
	out, err := rbac.Render(rbac.Params{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"namespace: " + rbac.DefaultNamespace, "- " + rbac.DefaultLeaseName, "name: " + rbac.DefaultName} {
		if !strings.Contains(string(out), want) {
			t.Errorf("Render(defaults) lacks %q", want)
		}
	}
	o, err := rbac.Parse()
	if err != nil {
		t.Fatal(err)
	}
	if o.Role.Namespace != rbac.DefaultLeaseNamespace || o.ServiceAccount.Name != rbac.DefaultName {
		t.Errorf("the files place the Role in %s and name the ServiceAccount %s; the defaults say %s, %s",
			o.Role.Namespace, o.ServiceAccount.Name, rbac.DefaultLeaseNamespace, rbac.DefaultName)
	}
}
