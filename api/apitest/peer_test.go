package apitest

import (
	"sort"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dovetail-sh/dovetail/api/internal/peercrds"
	"github.com/dovetail-sh/dovetail/internal/testutil/poll"
)

// peerGroup is where the peer's CRDs are installed beside ours, so both
// answer for the same objects: karpenter.sh becomes peer.karpenter.sh,
// karpenter.k8s.aws peer.karpenter.k8s.aws.
func peerGroup(g string) string { return "peer." + g }

// installPeerCRDs fetches the peer's CRDs (failing, not skipping, when they
// cannot be had), moves them to the peer groups and installs them.
func installPeerCRDs(t *testing.T, c client.Client) {
	t.Helper()
	files, err := peercrds.Fetch(t.TempDir())
	if err != nil {
		t.Fatalf("fetching the peer's CRDs: %v", err)
	}
	ctx := testContext(t)
	for _, name := range peercrds.Files {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(files[name], crd); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		crd.Spec.Group = peerGroup(crd.Spec.Group)
		crd.Name = crd.Spec.Names.Plural + "." + crd.Spec.Group
		crd.ResourceVersion = ""
		if err := c.Create(ctx, crd); err != nil && !strings.Contains(err.Error(), "already exists") {
			t.Fatalf("installing the peer's %s: %v", name, err)
		}
		poll.Until(t, time.Minute, 50*time.Millisecond, "the peer's "+crd.Name+" established", func() (bool, error) {
			cur := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(crd), cur); err != nil {
				return false, err
			}
			for _, cond := range cur.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
	}
}

// apiextensionsClient is a client for CustomResourceDefinitions.
func apiextensionsClient(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ext, err := client.New(cp.RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return ext
}

// asPeer is obj in the peer's group.
func asPeer(obj *unstructured.Unstructured) *unstructured.Unstructured {
	p := obj.DeepCopy()
	gv := p.GroupVersionKind()
	gv.Group = peerGroup(gv.Group)
	p.SetGroupVersionKind(gv)
	return p
}

// knownDisagreements are the apitest cases on which our CRDs and the
// peer's decide differently, with why (docs/api.md lists them too).
// TestAgreesWithThePeer fails on any other disagreement and on a listed
// case that agrees again. None remain: what the peer's CRD admits and the
// peer refuses at run time (requirement values, cron fields, kubelet
// settings and their types) ours admits too and refuses at run time
// (runtimeCases).
var knownDisagreements = map[string]string{}

// TestAgreesWithThePeer sends every valid, invalid and runtime case of this package
// to our CRDs and to the peer's (installed beside them under other groups)
// and compares the verdicts, CEL rules included: a case the peer accepts
// and ours refuses means ours is stricter; one the peer refuses and ours
// accepts means ours lacks a rule.
func TestAgreesWithThePeer(t *testing.T) {
	installPeerCRDs(t, apiextensionsClient(t))
	c := newClient(t)
	ctx := testContext(t)
	verdict := func(obj *unstructured.Unstructured) (bool, string) {
		err := c.Create(ctx, obj, client.DryRunAll)
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	}
	type sample struct{ name, base, patch string }
	var samples []sample
	for _, v := range validCases() {
		samples = append(samples, sample{"valid: " + v.name, v.base, v.patch})
	}
	for _, v := range invalidCases() {
		samples = append(samples, sample{"invalid: " + v.name, v.base, v.patch})
	}
	// Admitted by both, refused at run time by both.
	for _, v := range runtimeCases() {
		samples = append(samples, sample{"runtime: " + v.name, v.base, v.patch})
	}
	var got []string
	for _, s := range samples {
		obj := object(t, s.base, "agree", s.patch)
		oursOK, oursWhy := verdict(obj)
		peerOK, peerWhy := verdict(asPeer(obj))
		if oursOK == peerOK {
			if _, listed := knownDisagreements[s.name]; listed {
				t.Errorf("%s: listed in knownDisagreements but both now %s", s.name, map[bool]string{true: "accept", false: "refuse"}[oursOK])
			}
			continue
		}
		got = append(got, s.name)
		if _, listed := knownDisagreements[s.name]; listed {
			continue
		}
		if peerOK {
			t.Errorf("%s: the peer accepts, ours refuses (ours stricter): %s", s.name, oursWhy)
		} else {
			t.Errorf("%s: the peer refuses, ours accepts (ours lacks a rule): %s", s.name, peerWhy)
		}
	}
	sort.Strings(got)
	t.Logf("%d cases, %d disagreements (%d known): %s", len(samples), len(got), len(knownDisagreements), strings.Join(got, "; "))
}
