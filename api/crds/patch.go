package crds

import (
	"bytes"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// Patterns the peer's CRDs put where controller-gen markers cannot reach
// (map values, the fields of corev1.Taint, the requirement values array).
const (
	labelValuePattern = `^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	taintPattern      = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
)

// amendment sets keys on the schema node at a dotted property path of a
// CRD's v1 schema ("[]" steps into items, "{}" into additionalProperties).
type amendment struct {
	file, path string
	set        map[string]any
}

func taintAmendments(file, list string) []amendment {
	return []amendment{
		{file, list + ".[].key", map[string]any{"minLength": 1, "pattern": taintPattern}},
		{file, list + ".[].value", map[string]any{"pattern": taintPattern}},
		{file, list + ".[].effect", map[string]any{"enum": []any{"NoSchedule", "PreferNoSchedule", "NoExecute"}}},
	}
}

var amendments = func() []amendment {
	out := []amendment{
		{"karpenter.sh_nodepools.yaml", "spec.template.metadata.labels.{}", map[string]any{"maxLength": 63, "pattern": labelValuePattern}},
		// The peer puts these on the requirement values array, where the
		// API server ignores them (they apply to strings); kept field for
		// field. Values are checked as label values at run time.
		{"karpenter.sh_nodepools.yaml", "spec.template.spec.requirements.[].values", map[string]any{"maxLength": 63, "pattern": labelValuePattern}},
		{"karpenter.sh_nodeclaims.yaml", "spec.requirements.[].values", map[string]any{"maxLength": 63, "pattern": labelValuePattern}},
		{"karpenter.sh_nodeoverlays.yaml", "spec.requirements.[].values", map[string]any{"maxLength": 63, "pattern": labelValuePattern}},
	}
	out = append(out, taintAmendments("karpenter.sh_nodepools.yaml", "spec.template.spec.taints")...)
	out = append(out, taintAmendments("karpenter.sh_nodepools.yaml", "spec.template.spec.startupTaints")...)
	out = append(out, taintAmendments("karpenter.sh_nodeclaims.yaml", "spec.taints")...)
	out = append(out, taintAmendments("karpenter.sh_nodeclaims.yaml", "spec.startupTaints")...)
	return out
}()

// Patch amends a CRD file as controller-gen wrote it (name is its file
// name) with the validation its markers cannot express: label values
// checked by pattern and length, taint keys, values and effects checked as
// the peer's CRDs check them. Files without amendments are returned
// unchanged. `make generate` and hack/verify-generated.sh run it (through
// api/crds/internal/patchcrds) after controller-gen.
func Patch(name string, doc []byte) ([]byte, error) {
	var todo []amendment
	for _, a := range amendments {
		if a.file == name {
			todo = append(todo, a)
		}
	}
	if len(todo) == 0 {
		return doc, nil
	}
	var crd map[string]any
	if err := yaml.Unmarshal(doc, &crd); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	spec, _ := crd["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		schema, _ := vm["schema"].(map[string]any)
		node, _ := schema["openAPIV3Schema"].(map[string]any)
		if node == nil {
			return nil, fmt.Errorf("%s: version %v has no openAPIV3Schema", name, vm["name"])
		}
		for _, a := range todo {
			n := node
			for _, step := range strings.Split(a.path, ".") {
				var next map[string]any
				switch step {
				case "[]":
					next, _ = n["items"].(map[string]any)
				case "{}":
					next, _ = n["additionalProperties"].(map[string]any)
				default:
					props, _ := n["properties"].(map[string]any)
					next, _ = props[step].(map[string]any)
				}
				if next == nil {
					return nil, fmt.Errorf("%s: no schema at %s (step %q)", name, a.path, step)
				}
				n = next
			}
			for k, val := range a.set {
				n[k] = val
			}
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if bytes.HasPrefix(doc, []byte("---\n")) {
		out = append([]byte("---\n"), out...)
	}
	return out, nil
}
