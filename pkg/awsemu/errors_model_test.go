package awsemu

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
)

// ec2Errors is the reference for the EC2 error codes the emulator sends:
// the HTTP status EC2 answers each with, from AWS's EC2 API reference
// ("Error codes": client errors are 400 except UnauthorizedOperation 403
// and DryRunOperation 412; InternalError and InsufficientInstanceCapacity
// are server errors, 500; RequestLimitExceeded 503), and whether the
// service models name the code (botocore's EC2 model, waiters and retry
// rules, or aws-sdk-go-v2's EC2 package). TestEC2ErrorCodesMatchTheModels
// checks that the emulator sends no code outside this table, each with
// its status, and that every code marked named is found in the models.
// The models carry no HTTP statuses for EC2 (its errors are not modeled
// shapes), so statuses come from the reference only.
var ec2Errors = map[string]struct {
	status int
	named  bool // in the models' text
}{
	"DryRunOperation":                   {http.StatusPreconditionFailed, true},
	"UnauthorizedOperation":             {http.StatusForbidden, true},
	"RequestLimitExceeded":              {http.StatusServiceUnavailable, true},
	"InternalError":                     {http.StatusInternalServerError, true},
	"InsufficientInstanceCapacity":      {http.StatusInternalServerError, true},
	"InvalidParameterValue":             {400, true},
	"InvalidAMIID.NotFound":             {400, true},
	"InvalidGroup.NotFound":             {400, true},
	"InvalidInstanceID.Malformed":       {400, true},
	"InvalidInstanceID.NotFound":        {400, true},
	"InvalidSubnetID.NotFound":          {400, true},
	"InvalidVpcID.NotFound":             {400, true},
	"InsufficientFreeAddressesInSubnet": {400, true},
	"InvalidParameterCombination":       {400, true},
	"Unsupported":                       {400, true},
	// Named by AWS's reference, not by the models.
	"IdempotentParameterMismatch":                      {400, false},
	"InvalidAMIID.Malformed":                           {400, false},
	"InvalidFleetId.NotFound":                          {400, false},
	"InvalidGroupId.Malformed":                         {400, false},
	"InvalidID":                                        {400, false},
	"InvalidInstanceType":                              {400, false},
	"InvalidLaunchTemplateId.Malformed":                {400, false},
	"InvalidLaunchTemplateId.NotFound":                 {400, false},
	"InvalidLaunchTemplateId.VersionNotFound":          {400, false},
	"InvalidLaunchTemplateName.AlreadyExistsException": {400, false},
	"InvalidLaunchTemplateName.NotFoundException":      {400, false},
	"InvalidSubnetID.Malformed":                        {400, false},
	"TagLimitExceeded":                                 {400, false},
	"InvalidAction":                                    {400, false},
	"MissingParameter":                                 {400, false},
	"InvalidCapacityReservationId.NotFound":            {400, false},
	"ReservationCapacityExceeded":                      {400, false},
}

// ec2Files are the emulator's files that answer EC2 actions.
var ec2Files = []string{"ec2.go", "filters.go", "errors.go", "query.go", "ec2xml.go", "fleet.go", "idempotency.go", "run.go", "images.go", "capacity.go", "lifecycle.go", "reservations.go"}

// emittedEC2Codes reads, from the source of ec2Files, every error code the
// emulator sends with its status: newAPIError(code, status, ...) and
// notFoundIDs(kind, code, ids) (400) with a literal code, and the
// per-override codes of CreateFleet's error set (status 0: in a 200
// answer; RunInstances fails with them, status ec2ErrorStatus). A call whose code or status is not a literal is reported, so
// the scan cannot miss one silently.
func emittedEC2Codes(t *testing.T) map[string]map[int]bool {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string]map[int]bool{}
	add := func(code string, status int) {
		if out[code] == nil {
			out[code] = map[int]bool{}
		}
		out[code][status] = true
	}
	for _, name := range ec2Files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				fn, _ := call.Fun.(*ast.Ident)
				if fn == nil {
					return true
				}
				switch fn.Name {
				case "newAPIError":
					code, ok := stringLit(call.Args[0])
					if st, isCall := call.Args[1].(*ast.CallExpr); !ok && isCall {
						if f, _ := st.Fun.(*ast.Ident); f != nil && f.Name == "ec2ErrorStatus" {
							return true // a fleet candidate's code, collected from fleet.go and checked through ec2ErrorStatus
						}
					}
					if !ok {
						if id, isIdent := call.Args[0].(*ast.Ident); isIdent && id.Name == "code" {
							return true // a helper passing its argument on (notFoundIDs)
						}
						t.Errorf("%s: newAPIError with a code that is not a literal", fset.Position(call.Pos()))
						return true
					}
					status, ok := statusLit(call.Args[1])
					if !ok {
						t.Errorf("%s: newAPIError(%s) with a status that is not a literal", fset.Position(call.Pos()), code)
						return true
					}
					add(code, status)
				case "notFoundIDs":
					code, ok := stringLit(call.Args[1])
					if !ok {
						t.Errorf("%s: notFoundIDs with a code that is not a literal", fset.Position(call.Pos()))
						return true
					}
					add(code, 400)
				}
			}
			if lit, ok := n.(*ast.BasicLit); ok && name == "fleet.go" {
				if s, _ := strconv.Unquote(lit.Value); strings.HasPrefix(s, "Insufficient") && !strings.Contains(s, " ") {
					add(s, 0)
				}
			}
			return true
		})
	}
	return out
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

func statusLit(e ast.Expr) (int, bool) {
	switch v := e.(type) {
	case *ast.BasicLit:
		n, err := strconv.Atoi(v.Value)
		return n, err == nil
	case *ast.SelectorExpr:
		if x, ok := v.X.(*ast.Ident); ok && x.Name == "http" {
			return map[string]int{"StatusBadRequest": 400, "StatusForbidden": 403, "StatusPreconditionFailed": 412,
				"StatusInternalServerError": 500, "StatusServiceUnavailable": 503}[v.Sel.Name], true
		}
	}
	return 0, false
}

// modelText is the text of the models that can name EC2 error codes:
// botocore's EC2 service model, waiters and retry rules, and the Go
// source of aws-sdk-go-v2's EC2 package (its waiters).
func modelText(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	out, err := exec.Command("python3", "-c", `
import botocore.session, json
l = botocore.session.get_session().get_component('data_loader')
print(json.dumps(l.load_service_model('ec2', 'service-2')))
print(json.dumps(l.load_service_model('ec2', 'waiters-2')))
print(json.dumps(l.load_data('_retry')))
`).Output()
	if err != nil {
		t.Fatalf("reading botocore's EC2 model: %v", err)
	}
	b.Write(out)
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/aws/aws-sdk-go-v2/service/ec2").Output()
	if err != nil {
		t.Fatalf("locating aws-sdk-go-v2's EC2 module: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(dir)), "api_op_*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("aws-sdk-go-v2's EC2 module has no api_op files (%v)", err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(src)
	}
	return b.String()
}

// TestEC2ErrorCodesMatchTheModels: every error code the emulator's EC2
// actions send is one EC2 sends, with EC2's HTTP status; the ones the
// reference marks as named are found in the models; the throttling code
// is one both SDKs treat as throttling.
func TestEC2ErrorCodesMatchTheModels(t *testing.T) {
	emitted := emittedEC2Codes(t)
	// Sent from emulator.go (throttleError) and faults.go (DenyAction),
	// which serve every protocol; probed on the wire below.
	emitted["RequestLimitExceeded"] = map[int]bool{503: true}
	emitted["UnauthorizedOperation"] = map[int]bool{403: true}
	text := modelText(t)
	var codes []string
	for c := range emitted {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, code := range codes {
		ref, ok := ec2Errors[code]
		if !ok {
			t.Errorf("the emulator sends %s, which is not in the EC2 reference table", code)
			continue
		}
		for status := range emitted[code] {
			if status == 0 { // a CreateFleet error-set code; RunInstances fails with it
				status = ec2ErrorStatus(code)
			}
			if status != ref.status {
				t.Errorf("%s: the emulator answers HTTP %d, EC2 %d", code, status, ref.status)
			}
		}
	}
	for code, ref := range ec2Errors {
		if ref.named && !strings.Contains(text, `"`+code+`"`) && !strings.Contains(text, "<code>"+code+"</code>") && !strings.Contains(text, code) {
			t.Errorf("%s: marked as named by the models, but neither botocore's EC2 model nor aws-sdk-go-v2's EC2 package has it", code)
		}
		if !ref.named && strings.Contains(text, code) {
			t.Errorf("%s: the models name it; mark it named", code)
		}
		if emitted[code] == nil {
			t.Errorf("%s: in the reference table but the emulator never sends it (remove it)", code)
		}
	}
	if _, ok := retry.DefaultThrottleErrorCodes["RequestLimitExceeded"]; !ok {
		t.Error("aws-sdk-go-v2 does not treat RequestLimitExceeded as throttling")
	}
	if !strings.Contains(text, `"RequestLimitExceeded"`) {
		t.Error("botocore's retry rules do not name RequestLimitExceeded")
	}
	t.Logf("%d EC2 error codes sent, all in the reference", len(codes))
}

// TestEC2ErrorsOnTheWire probes the codes and HTTP statuses that matter
// most to a controller through aws-sdk-go-v2 (no retries, so the first
// answer is seen).
func TestEC2ErrorsOnTheWire(t *testing.T) {
	ctx := context.Background()
	e, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	cfg := e.AWSConfig()
	cfg.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
	c := ec2.NewFromConfig(cfg)
	check := func(name string, err error, code string) {
		t.Helper()
		var api smithy.APIError
		var resp *awshttp.ResponseError
		if !errors.As(err, &api) || !errors.As(err, &resp) {
			t.Errorf("%s: %v, want %s", name, err, code)
			return
		}
		if api.ErrorCode() != code || resp.HTTPStatusCode() != ec2Errors[code].status {
			t.Errorf("%s: %s HTTP %d, want %s HTTP %d", name, api.ErrorCode(), resp.HTTPStatusCode(), code, ec2Errors[code].status)
		}
	}
	_, err = c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}})
	check("unknown instance", err, "InvalidInstanceID.NotFound")
	_, err = c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("network-interface.mac-address"), Values: []string{"x"}}}})
	check("unanswered DescribeInstances filter", err, "InvalidParameterValue")
	_, err = c.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{{Name: aws.String("launch-template-id"), Values: []string{"lt-1"}}}})
	check("filter the model does not document", err, "InvalidParameterValue")
	_, err = c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{DryRun: aws.Bool(true)})
	check("dry run", err, "DryRunOperation")
	if err := e.DenyAction("ec2:DescribeSubnets"); err != nil {
		t.Fatal(err)
	}
	_, err = c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	check("denied", err, "UnauthorizedOperation")
	e.ClearFaults()
	e.SetThrottle(1, 1)
	_, err = c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	check("throttled", err, "RequestLimitExceeded")
	e.ClearFaults()
}
