package commitment_test

import (
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/commitment"
)

// A negative or unparseable amount, a negative count, an unknown field or
// another data key refuses the whole ConfigMap with an error naming the
// field, and nothing is applied (the Spec is empty, so plans are as
// without commitments).
func TestFromConfigMapRefusesBadInputNamingTheField(t *testing.T) {
	for _, tc := range []struct {
		data  map[string]string
		field string
	}{
		{map[string]string{"commitments.yaml": "savingsPlans: [{name: a, type: Compute, hourlyCommitment: -5}]\nreservedInstances: [{name: b, instanceType: m5.large, count: 2}]"},
			"data[commitments.yaml].savingsPlans[0].hourlyCommitment"},
		{map[string]string{"commitments.yaml": "savingsPlans: [{name: a, type: Compute, hourlyCommitment: \"1e999\"}]"}, "data[commitments.yaml].savingsPlans[0].hourlyCommitment"},
		{map[string]string{"commitments.yaml": "reservedInstances: [{name: b, instanceType: m5.large, count: -1}]"}, "data[commitments.yaml].reservedInstances[0].count"},
		{map[string]string{"commitments.yaml": "savingsPlans: [{name: a, type: EC2Instance, hourlyCommitment: 1}]"}, "data[commitments.yaml].savingsPlans[0].instanceFamily"},
		{map[string]string{"commitments.yaml": "savingsPlans: [{name: a, type: Compute, hourlyCommitment: 1, discount: 3}]"}, "unknown field \"discount\""},
		{map[string]string{"commitments.yaml": "savingsPlans: [{name: a, type: Compute, hourlyCommitment: 1}, {name: a, type: Compute, hourlyCommitment: 1}]"}, "savingsPlans[1].name"},
		{map[string]string{"other": "x"}, "data[other]"},
	} {
		spec, errs := commitment.FromConfigMap(tc.data)
		if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.field) {
			t.Errorf("%v: errors %v, want one naming %s", tc.data, errs, tc.field)
		}
		if commitment.NewLedger(spec) != nil {
			t.Errorf("%v: refused but the spec still commits something: %+v", tc.data, spec)
		}
	}
	spec, errs := commitment.FromConfigMap(map[string]string{"commitments.yaml": "savingsPlans: [{name: a, type: Compute, hourlyCommitment: 2.5}, {name: b, type: Compute, hourlyCommitment: \"0\"}]"})
	if len(errs) != 0 || len(spec.SavingsPlans) != 2 {
		t.Fatalf("a valid ConfigMap: %v, %+v", errs, spec)
	}
	if v, _ := spec.SavingsPlans[0].HourlyCommitment.Value(); v != 2.5 {
		t.Errorf("amount %v, want 2.5 from a YAML number", v)
	}
}

// The ledger: Reserved Instances by type, zone and count first, then
// EC2Instance plans by family and region, then Compute plans; a new node
// is covered whole or not at all, a running one may be covered in part.
func TestLedger(t *testing.T) {
	spec := commitment.Spec{
		SavingsPlans: []commitment.SavingsPlan{
			{Name: "compute", Type: commitment.TypeCompute, HourlyCommitment: "1"},
			{Name: "m5-east", Type: commitment.TypeEC2Instance, InstanceFamily: "m5", Region: "us-east-1", HourlyCommitment: "0.2"},
		},
		ReservedInstances: []commitment.ReservedInstance{{Name: "ri", InstanceType: "c5.large", Zone: "us-east-1a", Count: 1}},
	}
	l := commitment.NewLedger(spec)
	take := func(it, zone string, price float64) string {
		return l.Take(commitment.Usage{InstanceType: it, Zone: zone, Region: "us-east-1", PricePerHour: price}).Commitment
	}
	if got := take("c5.large", "us-east-1b", 0.085); got != "compute" {
		t.Errorf("c5.large in another zone than the zonal RI: %q, want compute", got)
	}
	if got := take("c5.large", "us-east-1a", 0.085); got != "ri" {
		t.Errorf("c5.large in the RI's zone: %q, want ri", got)
	}
	if got := take("c5.large", "us-east-1a", 0.085); got != "compute" {
		t.Errorf("a second c5.large: %q, want compute (the RI is used)", got)
	}
	if got := take("m5.large", "us-east-1a", 0.096); got != "m5-east" {
		t.Errorf("m5.large: %q, want the EC2Instance plan first", got)
	}
	if got := take("m5.large", "us-east-1a", 0.096); got != "m5-east" {
		t.Errorf("second m5.large: %q, want m5-east ($0.008 left)", got)
	}
	if got := take("m5.large", "us-east-1a", 0.096); got != "compute" {
		t.Errorf("third m5.large: %q, want compute (m5-east has $0.008/h left)", got)
	}
	left := l.Left()["compute"]
	if got := take("r5.24xlarge", "us-east-1a", 6.048); got != "" {
		t.Errorf("a node dearer than what is left ($%v/h): covered by %q, want nothing", left, got)
	}
	c := l.TakeExisting(commitment.Usage{InstanceType: "r5.24xlarge", Zone: "us-east-1a", PricePerHour: 6.048})
	if c.Commitment != "m5-east" && c.Commitment != "compute" || c.Full {
		t.Fatalf("a running node dearer than what is left: %+v, want covered in part", c)
	}
	if m := c.Marginal(6.048); m < 6.048-1 || m >= 6.048 {
		t.Errorf("its marginal price %v, want the uncovered part", m)
	}
}
