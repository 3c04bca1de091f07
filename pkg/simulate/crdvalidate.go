package simulate

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/dovetail-sh/dovetail/api/crds"
)

// crdValidator checks one kind against its CRD as the API server does on
// create: nulls pruned, defaults applied, then the OpenAPI schema and the
// CEL rules (x-kubernetes-validations) of the served version. The status
// is left out (the server drops it on create: it is a subresource).
type crdValidator struct {
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// crdValidators are built once, on the first NodePool, NodeClaim or
// EC2NodeClass read (compiling the CEL rules takes a moment).
var crdValidators = sync.OnceValues(func() (map[string]*crdValidator, error) {
	objs, err := crds.Objects()
	if err != nil {
		return nil, err
	}
	out := map[string]*crdValidator{}
	for _, crd := range objs {
		for _, v := range crd.Spec.Versions {
			if !v.Served || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			internal := &apiextensions.JSONSchemaProps{}
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
				return nil, fmt.Errorf("CRD %s: %w", crd.Name, err)
			}
			s, err := structuralschema.NewStructural(internal)
			if err != nil {
				return nil, fmt.Errorf("CRD %s: %w", crd.Name, err)
			}
			sv, _, err := apiservervalidation.NewSchemaValidator(internal)
			if err != nil {
				return nil, fmt.Errorf("CRD %s: %w", crd.Name, err)
			}
			out[crd.Spec.Group+"/"+v.Name+"/"+crd.Spec.Names.Kind] = &crdValidator{
				structural: s, schema: sv, cel: cel.NewValidator(s, true, celconfig.PerCallLimit),
			}
		}
	}
	return out, nil
})

// validateAgainstCRD checks raw (one object's JSON) against the CRD of
// apiVersion/kind; kinds without a CRD give nil. Paths are rooted at the
// object.
func validateAgainstCRD(apiVersion, kind string, raw []byte) field.ErrorList {
	validators, err := crdValidators()
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("<document>"), err)}
	}
	v := validators[apiVersion+"/"+kind]
	if v == nil {
		return nil
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("<document>"), nil, err.Error())}
	}
	delete(obj, "status")
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, v.structural)
	structuraldefaulting.Default(obj, v.structural)
	errs := apiservervalidation.ValidateCustomResource(nil, obj, v.schema)
	if len(errs) > 0 {
		// The server runs the CEL rules only on a schema-valid object.
		return errs
	}
	celErrs, _ := v.cel.Validate(context.Background(), nil, v.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return celErrs
}
