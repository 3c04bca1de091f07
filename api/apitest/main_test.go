package apitest

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	autoscalingv1beta1 "github.com/dovetail-sh/dovetail/api/autoscaling/v1beta1"
	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail-sh/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(controlplanetest.Main(m, controlplane.Options{}, &cp))
}

// newClient returns a controller-runtime client that knows the API types.
func newClient(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, karpv1.AddToScheme, awsv1.AddToScheme, karpv1alpha1.AddToScheme, autoscalingv1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cp.RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// fromYAML decodes a manifest into an unstructured object.
func fromYAML(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("test manifest does not parse: %v\n%s", err, doc)
	}
	return u
}

// mergePatch applies an RFC 7386 JSON merge patch, written as YAML, to obj:
// maps merge recursively, null deletes, anything else (lists included)
// replaces.
func mergePatch(t *testing.T, obj map[string]any, patchYAML string) {
	t.Helper()
	var patch map[string]any
	if err := yaml.Unmarshal([]byte(patchYAML), &patch); err != nil {
		t.Fatalf("test patch does not parse: %v\n%s", err, patchYAML)
	}
	merge(obj, patch)
}

func merge(dst, patch map[string]any) {
	for k, v := range patch {
		if v == nil {
			delete(dst, k)
			continue
		}
		if pm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				merge(dm, pm)
				continue
			}
		}
		dst[k] = v
	}
}

// requireInvalid fails unless err is the apiserver's Invalid error with a
// cause whose field path contains field (and, when given, whose message
// contains msg).
func requireInvalid(t *testing.T, err error, field, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want an Invalid error on %s", field)
	}
	var status *apierrors.StatusError
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.ErrStatus.Details == nil {
		t.Fatalf("error %v; want an Invalid error on %s", err, field)
	}
	for _, c := range status.ErrStatus.Details.Causes {
		if strings.Contains(c.Field, field) && strings.Contains(c.Message, msg) {
			return
		}
	}
	t.Fatalf("no cause on field %q with message %q in: %v", field, msg, err)
}

// toUnstructured converts a typed object into an unstructured one through
// JSON, the way a client encodes what it sends.
func toUnstructured(t *testing.T, typed any, into *unstructured.Unstructured) {
	t.Helper()
	b, err := json.Marshal(typed)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &into.Object); err != nil {
		t.Fatal(err)
	}
}

func resourceQuantity(t *testing.T, s string) resource.Quantity {
	t.Helper()
	q, err := resource.ParseQuantity(s)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// toTyped converts an unstructured object into a typed one through JSON,
// the way a client decodes what the server sent.
func toTyped(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	b, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("decoding %s %s into %T: %v", u.GetKind(), u.GetName(), into, err)
	}
}
