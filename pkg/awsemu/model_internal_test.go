package awsemu

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// botocoreEC2 runs a Python snippet against botocore's EC2 service model
// (the model boto3 ships; `m` is the ServiceModel) and decodes the JSON it
// prints.
func botocoreEC2(t *testing.T, snippet string, out any) {
	t.Helper()
	script := "import botocore.session, json\nm = botocore.session.get_session().get_service_model('ec2')\n" + snippet
	b, err := exec.Command("python3", "-c", script).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("reading botocore's EC2 model: %v\n%s", err, stderr)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("decoding %q: %v", b, err)
	}
}

// The MaxResults bounds of every paginated operation are those of
// botocore's EC2 model: a bounded shape has the same min and max, an
// unbounded one is not capped by the emulator.
func TestPageLimitsMatchBotocore(t *testing.T) {
	var model map[string][2]*int
	botocoreEC2(t, `
out = {}
for op in m.operation_names:
    inp = m.operation_model(op).input_shape
    if inp is None or 'MaxResults' not in inp.members:
        continue
    s = inp.members['MaxResults']
    out[op] = [s.metadata.get('min'), s.metadata.get('max')]
print(json.dumps(out))
`, &model)
	for op, lim := range opPageLimits {
		bounds, ok := model[op]
		if !ok {
			t.Errorf("%s: botocore's model has no MaxResults for it", op)
			continue
		}
		lo, hi := bounds[0], bounds[1]
		switch {
		case hi == nil && lim.max != 0:
			t.Errorf("%s: the model leaves MaxResults unbounded; the emulator caps it at %d", op, lim.max)
		case hi != nil && lim.max != *hi:
			t.Errorf("%s: MaxResults max %d, the model says %d", op, lim.max, *hi)
		}
		if lo != nil && lim.min != *lo {
			t.Errorf("%s: MaxResults min %d, the model says %d", op, lim.min, *lo)
		}
		if lo == nil && lim.min > 1 {
			t.Errorf("%s: the model has no MaxResults minimum; the emulator refuses below %d", op, lim.min)
		}
	}
	for op := range ec2Ops {
		if _, paged := model[op]; paged {
			if _, ok := opPageLimits[op]; !ok {
				t.Errorf("%s takes MaxResults in the model; the emulator has no page limits for it", op)
			}
		}
	}
}

// modelFilters are the filter names botocore's model documents for each
// operation (the <code>name</code> items of its Filters member).
func modelFilters(t *testing.T, ops ...string) map[string][]string {
	t.Helper()
	var out map[string][]string
	list, _ := json.Marshal(ops)
	botocoreEC2(t, `
import re
out = {}
for op in `+string(list)+`:
    doc = m.operation_model(op).input_shape.members['Filters'].documentation
    out[op] = re.findall(r'<li>\s*<p>\s*<code>([a-z0-9.:\-]+)</code>', doc)
print(json.dumps(out))
`, &out)
	return out
}

// unimplementedFilters are the model's filters the emulator refuses, each
// because its catalog has no data for it. Everything else in the model is
// answered; nothing outside it is.
var unimplementedFilters = map[string][]string{
	"DescribeInstanceTypes": {
		"ebs-info.attachment-limit-type", "ebs-info.ebs-optimized-info.baseline-bandwidth-in-mbps",
		"ebs-info.ebs-optimized-info.baseline-iops", "ebs-info.ebs-optimized-info.baseline-throughput-in-mbps",
		"ebs-info.ebs-optimized-info.maximum-bandwidth-in-mbps", "ebs-info.ebs-optimized-info.maximum-iops",
		"ebs-info.ebs-optimized-info.maximum-throughput-in-mbps", "instance-storage-info.disk.count",
		"instance-storage-info.disk.size-in-gb", "instance-storage-info.disk.type", "instance-storage-info.encryption-support",
		"network-info.bandwidth-weightings", "network-info.efa-info.maximum-efa-interfaces", "network-info.flexible-ena-queues-support",
		"nitro-tpm-info.supported-versions", "processor-info.supported-features", "reboot-migration-support",
		"vcpu-info.valid-cores", "vcpu-info.valid-threads-per-core",
	},
	"DescribeInstanceStatus": {
		"event.code", "event.description", "event.instance-event-id", "event.not-after", "event.not-before",
		"event.not-before-deadline", "operator.managed", "operator.principal", "attached-ebs-status.status",
	},
}

// Every filter the emulator answers for these operations is one botocore's
// model documents, and every documented one is answered unless listed in
// unimplementedFilters; probed through aws-sdk-go-v2.
func TestFiltersMatchBotocore(t *testing.T) {
	ops := []string{"DescribeInstanceTypes", "DescribeSpotPriceHistory", "DescribeInstanceStatus"}
	model := modelFilters(t, ops...)
	for name := range instanceTypeFilters {
		if !slices.Contains(model["DescribeInstanceTypes"], name) {
			t.Errorf("DescribeInstanceTypes: the emulator answers filter %q, which the model does not document", name)
		}
	}
	ctx := context.Background()
	e, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	c := ec2.NewFromConfig(e.AWSConfig())
	for _, op := range ops {
		if len(model[op]) == 0 {
			t.Fatalf("%s: no filters found in the model's documentation", op)
		}
		for _, name := range model[op] {
			f := []ec2types.Filter{{Name: aws.String(name), Values: []string{"x"}}}
			var err error
			switch op {
			case "DescribeInstanceTypes":
				_, err = c.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{Filters: f})
			case "DescribeSpotPriceHistory":
				_, err = c.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{Filters: f})
			case "DescribeInstanceStatus":
				_, err = c.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{Filters: f, IncludeAllInstances: aws.Bool(true)})
			}
			refused := err != nil && strings.Contains(err.Error(), "is invalid")
			if err != nil && !refused {
				t.Errorf("%s filter %s: %v", op, name, err)
			}
			if want := slices.Contains(unimplementedFilters[op], name); refused != want {
				t.Errorf("%s filter %s: refused %v, listed as unimplemented %v", op, name, refused, want)
			}
		}
	}
}
