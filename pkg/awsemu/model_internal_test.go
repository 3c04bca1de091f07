package awsemu

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
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
// because its catalog or its records have no data for it (emulated
// instances have no network-interface, capacity-reservation-specification,
// enclave, hibernation, maintenance, operator or private-DNS-name-options
// data). Everything else in the model is
// answered; nothing outside it is.
// filterValues are values the model's text lists, in the same markup, as
// nested items under a filter (a reservation's states, tenancies, ...):
// not filter names.
var filterValues = map[string][]string{
	"DescribeCapacityReservations": {"default", "dedicated", "active", "expired", "cancelled", "pending", "failed",
		"unlimited", "limited", "open", "targeted"},
}

var unimplementedFilters = map[string][]string{
	// Emulated reservations are on no Outpost and in no placement group.
	"DescribeCapacityReservations": {"outpost-arn", "placement-group-arn"},
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
	"DescribeSubnets": {
		"available-ip-address-count", "customer-owned-ipv4-pool", "enable-dns64", "enable-lni-at-device-index",
		"ipv6-cidr-block-association.ipv6-cidr-block", "ipv6-cidr-block-association.association-id",
		"ipv6-cidr-block-association.state", "ipv6-native", "map-customer-owned-ip-on-launch", "outpost-arn",
		"private-dns-name-options-on-launch.hostname-type", "private-dns-name-options-on-launch.enable-resource-name-dns-a-record",
		"private-dns-name-options-on-launch.enable-resource-name-dns-aaaa-record", "subnet-arn",
	},
	"DescribeSecurityGroups": {
		"egress.ip-permission.cidr", "egress.ip-permission.from-port", "egress.ip-permission.group-id",
		"egress.ip-permission.group-name", "egress.ip-permission.ipv6-cidr", "egress.ip-permission.prefix-list-id",
		"egress.ip-permission.protocol", "egress.ip-permission.to-port", "egress.ip-permission.user-id",
		"ip-permission.cidr", "ip-permission.from-port", "ip-permission.group-id", "ip-permission.group-name",
		"ip-permission.ipv6-cidr", "ip-permission.prefix-list-id", "ip-permission.protocol", "ip-permission.to-port",
		"ip-permission.user-id",
	},
	"DescribeImages": {
		"block-device-mapping.delete-on-termination", "block-device-mapping.device-name", "block-device-mapping.snapshot-id",
		"block-device-mapping.volume-size", "block-device-mapping.volume-type", "block-device-mapping.encrypted",
		"creation-date", "ena-support", "free-tier-eligible", "image-allowed", "kernel-id", "manifest-location", "platform",
		"product-code", "product-code.type", "ramdisk-id", "root-device-name", "source-image-id", "source-image-region",
		"source-instance-id", "state-reason-code", "state-reason-message", "sriov-net-support",
	},
	"DescribeAvailabilityZones": {"group-long-name", "message", "parent-zone-id", "parent-zone-name"},
	"DescribeVpcs": {
		"cidr-block-association.association-id", "cidr-block-association.state", "dhcp-options-id",
		"ipv6-cidr-block-association.ipv6-cidr-block", "ipv6-cidr-block-association.ipv6-pool",
		"ipv6-cidr-block-association.association-id", "ipv6-cidr-block-association.state",
	},
	"DescribeInstances": {
		"capacity-reservation-specification.capacity-reservation-preference",
		"capacity-reservation-specification.capacity-reservation-target.capacity-reservation-id",
		"capacity-reservation-specification.capacity-reservation-target.capacity-reservation-resource-group-arn",
		"current-instance-boot-mode", "enclave-options.enabled", "hibernation-options.configured",
		"maintenance-options.auto-recovery", "metadata-options.http-protocol-ipv4",
		"network-interface.addresses.association.allocation-id",
		"network-interface.addresses.association.association-id",
		"network-interface.addresses.association.carrier-ip",
		"network-interface.addresses.association.customer-owned-ip",
		"network-interface.addresses.association.ip-owner-id",
		"network-interface.addresses.association.public-dns-name",
		"network-interface.addresses.association.public-ip", "network-interface.addresses.primary",
		"network-interface.addresses.private-dns-name", "network-interface.addresses.private-ip-address",
		"network-interface.association.allocation-id", "network-interface.association.association-id",
		"network-interface.association.carrier-ip", "network-interface.association.customer-owned-ip",
		"network-interface.association.ip-owner-id", "network-interface.association.public-dns-name",
		"network-interface.association.public-ip", "network-interface.attachment.attach-time",
		"network-interface.attachment.attachment-id", "network-interface.attachment.delete-on-termination",
		"network-interface.attachment.device-index", "network-interface.attachment.instance-id",
		"network-interface.attachment.instance-owner-id", "network-interface.attachment.network-card-index",
		"network-interface.attachment.status", "network-interface.availability-zone",
		"network-interface.deny-all-igw-traffic", "network-interface.description", "network-interface.group-id",
		"network-interface.group-name", "network-interface.ipv4-prefixes.ipv4-prefix",
		"network-interface.ipv6-address", "network-interface.ipv6-addresses.ipv6-address",
		"network-interface.ipv6-addresses.is-primary-ipv6", "network-interface.ipv6-native",
		"network-interface.ipv6-prefixes.ipv6-prefix", "network-interface.mac-address",
		"network-interface.network-interface-id", "network-interface.operator.managed",
		"network-interface.operator.principal", "network-interface.outpost-arn", "network-interface.owner-id",
		"network-interface.private-dns-name", "network-interface.private-ip-address",
		"network-interface.public-dns-name", "network-interface.requester-id",
		"network-interface.requester-managed", "network-interface.status", "network-interface.source-dest-check",
		"network-interface.subnet-id", "network-interface.tag-key", "network-interface.tag-value",
		"network-interface.vpc-id", "network-performance-options.bandwidth-weighting", "operator.managed",
		"operator.principal", "private-dns-name-options.enable-resource-name-dns-a-record",
		"private-dns-name-options.enable-resource-name-dns-aaaa-record", "private-dns-name-options.hostname-type",
		"requester-id", "tpm-support", "usage-operation-update-time",
	},
	"DescribeInstanceStatus": {"operator.principal"},
}

// Every filter the emulator answers for DescribeInstanceTypes is one
// botocore's model documents; for these operations every documented filter
// is answered unless listed in unimplementedFilters (probed through
// aws-sdk-go-v2, on the seeded account, whose subnets, security groups,
// images, zones and VPCs every probe evaluates; DescribeInstances and
// DescribeLaunchTemplates check filter names before looking at any
// object, as EC2 does, so they are probed on an account without
// instances or launch templates).
func TestFiltersMatchBotocore(t *testing.T) {
	ops := []string{"DescribeInstanceTypes", "DescribeSpotPriceHistory", "DescribeInstanceStatus",
		"DescribeSubnets", "DescribeSecurityGroups", "DescribeImages", "DescribeAvailabilityZones", "DescribeVpcs",
		"DescribeInstances", "DescribeLaunchTemplates", "DescribeCapacityReservations"}
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
			if slices.Contains(filterValues[op], name) {
				continue
			}
			probe := name
			if name == "tag" { // documented as tag:<key>
				probe = "tag:team"
			}
			f := []ec2types.Filter{{Name: aws.String(probe), Values: []string{"x"}}}
			var err error
			switch op {
			case "DescribeInstanceTypes":
				_, err = c.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{Filters: f})
			case "DescribeSpotPriceHistory":
				_, err = c.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{Filters: f})
			case "DescribeInstanceStatus":
				_, err = c.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{Filters: f, IncludeAllInstances: aws.Bool(true)})
			case "DescribeSubnets":
				_, err = c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: f})
			case "DescribeSecurityGroups":
				_, err = c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: f})
			case "DescribeImages":
				_, err = c.DescribeImages(ctx, &ec2.DescribeImagesInput{Filters: f})
			case "DescribeAvailabilityZones":
				_, err = c.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{Filters: f})
			case "DescribeVpcs":
				_, err = c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: f})
			case "DescribeInstances":
				_, err = c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: f})
			case "DescribeLaunchTemplates":
				_, err = c.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: f})
			case "DescribeCapacityReservations":
				_, err = c.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{Filters: f})
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

// answeredFilters reads, from the source, the filter names each
// operation's handler answers: the string cases of the field functions it
// passes to matchFilters or matchUntagged (a function literal in the
// handler, or a named function such as instanceFields).
func answeredFilters(t *testing.T, ops []string) map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	funcs := map[string]*ast.FuncDecl{}
	for _, name := range []string{"ec2.go", "run.go", "instancestatus.go", "reservations.go"} {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				funcs[fd.Name.Name] = fd
			}
		}
	}
	cases := func(body ast.Node) []string {
		var out []string
		ast.Inspect(body, func(n ast.Node) bool {
			if cc, ok := n.(*ast.CaseClause); ok {
				for _, e := range cc.List {
					if s, ok := stringLit(e); ok {
						out = append(out, s)
					}
				}
			}
			return true
		})
		return out
	}
	handlers := opHandlers(t, "ec2.go", "ec2Ops")
	out := map[string][]string{}
	for _, op := range ops {
		h := funcs[handlers[op]]
		if h == nil {
			t.Fatalf("%s: no handler %s", op, handlers[op])
		}
		// Function literals assigned in the handler (fields := func...).
		lits := map[string]*ast.FuncLit{}
		ast.Inspect(h.Body, func(n ast.Node) bool {
			if as, ok := n.(*ast.AssignStmt); ok && len(as.Lhs) == 1 && len(as.Rhs) == 1 {
				if id, ok := as.Lhs[0].(*ast.Ident); ok {
					if fl, ok := as.Rhs[0].(*ast.FuncLit); ok {
						lits[id.Name] = fl
					}
				}
			}
			return true
		})
		ast.Inspect(h.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fn, ok := call.Fun.(*ast.Ident)
			if !ok || !(fn.Name == "matchFilters" && len(call.Args) == 3 || fn.Name == "matchUntagged" && len(call.Args) == 2) {
				return true
			}
			switch a := call.Args[len(call.Args)-1].(type) {
			case *ast.FuncLit:
				out[op] = append(out[op], cases(a.Body)...)
			case *ast.CallExpr:
				if fn, ok := a.Fun.(*ast.Ident); ok && funcs[fn.Name] != nil {
					out[op] = append(out[op], cases(funcs[fn.Name].Body)...)
				}
			case *ast.Ident:
				if fl := lits[a.Name]; fl != nil {
					out[op] = append(out[op], cases(fl.Body)...)
				}
			}
			return true
		})
		if len(out[op]) == 0 {
			t.Errorf("%s: found no filter names in handler %s", op, handlers[op])
		}
	}
	return out
}

// TestFiltersAnsweredAreDocumented is the other direction of
// TestFiltersMatchBotocore: every filter name an operation answers (read
// from its source) is one botocore's model documents for it, so nothing
// that works against the emulator fails against EC2.
func TestFiltersAnsweredAreDocumented(t *testing.T) {
	ops := []string{"DescribeSpotPriceHistory", "DescribeInstanceStatus", "DescribeSubnets", "DescribeSecurityGroups",
		"DescribeImages", "DescribeAvailabilityZones", "DescribeVpcs", "DescribeInstances", "DescribeLaunchTemplates",
		"DescribeCapacityReservations"}
	var docs map[string]string
	list, _ := json.Marshal(ops)
	botocoreEC2(t, `
out = {}
for op in `+string(list)+`:
    out[op] = m.operation_model(op).input_shape.members['Filters'].documentation
print(json.dumps(out))
`, &docs)
	// Tag filters: answered exactly where the model documents them.
	ctx := context.Background()
	e, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	c := ec2.NewFromConfig(e.AWSConfig())
	for _, op := range append([]string{"DescribeInstanceTypes"}, ops...) {
		if op == "DescribeInstanceTypes" {
			var d map[string]string
			botocoreEC2(t, `print(json.dumps({'DescribeInstanceTypes': m.operation_model('DescribeInstanceTypes').input_shape.members['Filters'].documentation}))`, &d)
			docs[op] = d[op]
		}
		documented := strings.Contains(docs[op], "<code>tag")
		if op == "DescribeCapacityReservations" {
			// EC2 answers tag filters here though the model's text does not
			// list them (the peer selects reservations by tag:KEY).
			documented = true
		}
		f := []ec2types.Filter{{Name: aws.String("tag:team"), Values: []string{"x"}}}
		var err error
		switch op {
		case "DescribeInstanceTypes":
			_, err = c.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{Filters: f})
		case "DescribeSpotPriceHistory":
			_, err = c.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{Filters: f})
		case "DescribeInstanceStatus":
			_, err = c.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{Filters: f, IncludeAllInstances: aws.Bool(true)})
		case "DescribeSubnets":
			_, err = c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: f})
		case "DescribeSecurityGroups":
			_, err = c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: f})
		case "DescribeImages":
			_, err = c.DescribeImages(ctx, &ec2.DescribeImagesInput{Filters: f})
		case "DescribeAvailabilityZones":
			_, err = c.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{Filters: f})
		case "DescribeVpcs":
			_, err = c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: f})
		case "DescribeInstances":
			_, err = c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: f})
		case "DescribeLaunchTemplates":
			_, err = c.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: f})
		case "DescribeCapacityReservations":
			_, err = c.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{Filters: f})
		}
		refused := err != nil && strings.Contains(err.Error(), "is invalid")
		if err != nil && !refused {
			t.Errorf("%s tag:team: %v", op, err)
		}
		if refused == documented {
			t.Errorf("%s: tag filters documented %v, refused %v", op, documented, refused)
		}
	}
	for op, names := range answeredFilters(t, ops) {
		for _, n := range names {
			// Documented as a filter or as another name for one ("You can
			// also use availabilityZone as the filter name").
			if !strings.Contains(docs[op], "<code>"+n+"</code>") {
				t.Errorf("%s answers filter %q, which botocore's model does not document", op, n)
			}
		}
	}
}
