package simulate_test

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// TestHugeRequestsAreTooLarge: a pod whose request overflows the engine's
// arithmetic (cpu 1e18 cores is 1e21 millicores) is left unschedulable as
// any too-large pod is, and no NodeClaim is planned for it.
func TestHugeRequestsAreTooLarge(t *testing.T) {
	for _, req := range []string{"cpu: 1e18", "memory: 1e19", "cpu: 9223372036854775807", "memory: 100Ei", "ephemeral-storage: 1e30"} {
		t.Run(req, func(t *testing.T) {
			m := read(t, nodeClassDoc, poolDoc, "apiVersion: v1\nkind: Pod\nmetadata: {name: huge}\nspec: {containers: [{name: c, resources: {requests: {"+req+"}}}]}")
			res, err := simulate.Run(m, simulate.Options{Region: "us-east-1"})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.NodeClaims) != 0 || len(res.Unschedulable) != 1 || res.Unschedulable[0].Code != "ResourcesExceedAllTypes" {
				t.Fatalf("plan: %d NodeClaims %+v, unschedulable %+v; want none and ResourcesExceedAllTypes", len(res.NodeClaims), res.NodeClaims, res.Unschedulable)
			}
		})
	}
	// The same huge pod next to a normal one: the normal one is planned.
	m := read(t, nodeClassDoc, poolDoc,
		"apiVersion: v1\nkind: Pod\nmetadata: {name: huge}\nspec: {containers: [{name: c, resources: {requests: {cpu: 1e18}}}, {name: d, resources: {requests: {cpu: 1e18}}}]}",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: small}\nspec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}")
	res, err := simulate.Run(m, simulate.Options{Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.NodeClaims) != 1 || len(res.NodeClaims[0].Pods) != 1 || res.NodeClaims[0].Pods[0] != "default/small" ||
		len(res.Unschedulable) != 1 || res.Unschedulable[0].Pod != "default/huge" {
		t.Fatalf("plan %+v unschedulable %+v", res.NodeClaims, res.Unschedulable)
	}
}

// TestCatalogRange: catalog values the engine cannot represent and prices
// that would make the totals infinite are refused, naming the field.
func TestCatalogRange(t *testing.T) {
	typ := func(capacity, price string) string {
		return `{"instanceTypes": [{"name": "t", "capacity": {` + capacity + `}, "offerings": [{"zone": "z1", "capacityType": "spot", "price": ` + price + `}]}]}`
	}
	for _, tc := range []struct{ name, file, field string }{
		{"cpu", typ(`"cpu": "9223372036854775807", "memory": "1Gi", "pods": "10"`, "0.1"), "instanceTypes[0].capacity[cpu]"},
		{"memory", typ(`"cpu": "2", "memory": "1e30", "pods": "10"`, "0.1"), "instanceTypes[0].capacity[memory]"},
		{"overhead", `{"instanceTypes": [{"name": "t", "capacity": {"cpu": "2"}, "overhead": {"cpu": "1e300"}, "offerings": [{"zone": "z1", "capacityType": "spot", "price": 1}]}]}`, "instanceTypes[0].overhead[cpu]"},
		{"price", typ(`"cpu": "2", "memory": "1Gi", "pods": "10"`, "1e307"), "instanceTypes[0].offerings[0].price"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := simulate.ReadCatalog("cat.json", []byte(tc.file), nil)
			if !errors.Is(err, simulate.ErrBadInput) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("err = %v, want bad input naming %s", err, tc.field)
			}
		})
	}
}

// TestRenderRefusesNonFinite: no format prints +Inf or NaN.
func TestRenderRefusesNonFinite(t *testing.T) {
	for _, format := range simulate.Formats() {
		for _, r := range []*simulate.Result{
			{TotalPricePerHour: math.Inf(1), LowerBoundPricePerHour: 1},
			{TotalPricePerHour: 1, LowerBoundPricePerHour: math.NaN()},
			{NodeClaims: []simulate.NodeClaim{{Name: "a", PricePerHour: math.Inf(1)}}},
		} {
			var out bytes.Buffer
			err := simulate.Render(&out, r, format)
			if err == nil || strings.Contains(out.String(), "Inf") || strings.Contains(out.String(), "NaN") {
				t.Errorf("%s: err %v, output %q", format, err, out.String())
			}
		}
	}
}
