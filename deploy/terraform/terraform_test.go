package terraform_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/dovetail-sh/dovetail/pkg/providers/aws/iampolicy"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/interruption/messages"
)

// module is a parsed module: its declarations and every block body.
type module struct {
	files     map[string]*hcl.File
	variables map[string]bool
	locals    map[string]bool
	resources map[string]*hclsyntax.Block // "type.name"
	data      map[string]*hclsyntax.Block // "type.name"
	modules   map[string]bool
	outputs   map[string]bool
}

func load(t *testing.T, dir string) *module {
	t.Helper()
	p := hclparse.NewParser()
	m := &module{files: map[string]*hcl.File{}, variables: map[string]bool{}, locals: map[string]bool{},
		resources: map[string]*hclsyntax.Block{}, data: map[string]*hclsyntax.Block{}, modules: map[string]bool{}, outputs: map[string]bool{}}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.tf"))
	if len(paths) == 0 {
		t.Fatalf("no .tf files in %s", dir)
	}
	for _, path := range paths {
		f, diags := p.ParseHCLFile(path)
		if diags.HasErrors() {
			t.Fatalf("%s", diags.Error())
		}
		m.files[path] = f
		for _, b := range f.Body.(*hclsyntax.Body).Blocks {
			switch b.Type {
			case "variable":
				m.variables[b.Labels[0]] = true
			case "locals":
				for name := range b.Body.Attributes {
					m.locals[name] = true
				}
			case "resource":
				m.resources[b.Labels[0]+"."+b.Labels[1]] = b
			case "data":
				m.data[b.Labels[0]+"."+b.Labels[1]] = b
			case "module":
				m.modules[b.Labels[0]] = true
			case "output":
				m.outputs[b.Labels[0]] = true
			}
		}
	}
	return m
}

// references checks that every traversal in the module names something it
// declares: var.X, local.X, data.T.N, T.N (resources), module.X, and
// Terraform's own path, each, count and self. A variable's type is not an
// expression and is skipped; for-expression symbols are excluded by
// Variables itself.
func (m *module) references(t *testing.T) int {
	t.Helper()
	n := 0
	builtin := map[string]bool{"path": true, "each": true, "count": true, "self": true, "terraform": true}
	var walk func(b *hclsyntax.Body, blockType string, dynamic map[string]bool)
	walk = func(b *hclsyntax.Body, blockType string, dynamic map[string]bool) {
		for name, a := range b.Attributes {
			if blockType == "variable" && name == "type" {
				continue
			}
			for _, v := range a.Expr.Variables() {
				n++
				m.check(t, v, builtin, dynamic)
			}
		}
		for _, c := range b.Blocks {
			scope := dynamic
			if c.Type == "dynamic" {
				scope = map[string]bool{c.Labels[0]: true}
				for k := range dynamic {
					scope[k] = true
				}
			}
			walk(c.Body, c.Type, scope)
		}
	}
	for _, f := range m.files {
		walk(f.Body.(*hclsyntax.Body), "", map[string]bool{})
	}
	return n
}

func (m *module) check(t *testing.T, v hcl.Traversal, builtin, dynamic map[string]bool) {
	t.Helper()
	root := v.RootName()
	attr := func(i int) string {
		if len(v) <= i {
			return ""
		}
		if a, ok := v[i].(hcl.TraverseAttr); ok {
			return a.Name
		}
		return ""
	}
	pos := v.SourceRange().String()
	switch {
	case builtin[root] || dynamic[root]:
	case root == "var":
		if !m.variables[attr(1)] {
			t.Errorf("%s: var.%s is not declared", pos, attr(1))
		}
	case root == "local":
		if !m.locals[attr(1)] {
			t.Errorf("%s: local.%s is not declared", pos, attr(1))
		}
	case root == "data":
		if m.data[attr(1)+"."+attr(2)] == nil {
			t.Errorf("%s: data.%s.%s is not declared", pos, attr(1), attr(2))
		}
	case root == "module":
		if !m.modules[attr(1)] {
			t.Errorf("%s: module.%s is not declared", pos, attr(1))
		}
	case m.resources[root+"."+attr(1)] != nil:
	default:
		t.Errorf("%s: %s is not a name the module declares", pos, strings.Join(names(v), "."))
	}
}

func names(v hcl.Traversal) []string {
	var out []string
	for _, s := range v {
		switch s := s.(type) {
		case hcl.TraverseRoot:
			out = append(out, s.Name)
		case hcl.TraverseAttr:
			out = append(out, s.Name)
		}
	}
	return out
}

func TestModuleReferencesResolve(t *testing.T) {
	for _, dir := range []string{".", "examples/complete"} {
		m := load(t, dir)
		if n := m.references(t); n == 0 {
			t.Errorf("%s: no references found", dir)
		}
	}
}

// attr returns a block attribute's source text.
func attrText(t *testing.T, b *hclsyntax.Block, name string) string {
	t.Helper()
	a, ok := b.Body.Attributes[name]
	if !ok {
		t.Fatalf("%s %v has no %s", b.Type, b.Labels, name)
	}
	r := a.Expr.Range()
	data, err := os.ReadFile(r.Filename)
	if err != nil {
		t.Fatal(err)
	}
	return string(data[r.Start.Byte:r.End.Byte])
}

// TestPoliciesAreTheGeneratedOnes: the module's policy files are docs/iam's
// (which iampolicy's golden test ties to the Go source), filled by
// templatefile with the same placeholders, each under IAM's limit for a
// 100-character cluster name, and all five are created and attached.
func TestPoliciesAreTheGeneratedOnes(t *testing.T) {
	src, _ := filepath.Glob("../../docs/iam/*.json")
	dst, _ := filepath.Glob("iam/*.json")
	if len(src) == 0 || len(src) != len(dst) {
		t.Fatalf("docs/iam has %d files, deploy/terraform/iam %d: copy them (make terraform-iam)", len(src), len(dst))
	}
	for _, f := range src {
		a, _ := os.ReadFile(f)
		b, err := os.ReadFile(filepath.Join("iam", filepath.Base(f)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("deploy/terraform/iam/%s differs from docs/iam: run `make terraform-iam`", filepath.Base(f))
		}
	}
	long := strings.Repeat("c", 100)
	params := iampolicy.Params{Partition: "aws-us-gov", Region: "us-gov-west-1", AccountID: "111122223333",
		ClusterName: long, NodeRoleName: strings.Repeat("r", 64), QueueName: strings.Repeat("q", 80)}
	vars := map[string]string{
		"AWS_PARTITION": params.Partition, "AWS_REGION": params.Region, "AWS_ACCOUNT_ID": params.AccountID,
		"CLUSTER_NAME": params.ClusterName, "NODE_ROLE_NAME": params.NodeRoleName, "INTERRUPTION_QUEUE": params.QueueName,
	}
	want := iampolicy.ControllerPolicies(params)
	if len(want) != 5 {
		t.Fatalf("%d controller policies, want 5", len(want))
	}
	for _, p := range want {
		data, err := os.ReadFile(filepath.Join("iam", "controller-"+p.Short+".json"))
		if err != nil {
			t.Fatalf("no file for policy %s: %v", p.Short, err)
		}
		// What templatefile does with ${NAME}.
		filled := os.Expand(string(data), func(k string) string { return vars[k] })
		doc, err := iampolicy.Parse([]byte(filled))
		if err != nil {
			t.Fatalf("%s: %v", p.Short, err)
		}
		if !bytes.Equal(doc.Minified(), p.Document.Minified()) {
			t.Errorf("%s filled by templatefile is not iampolicy's document", p.Short)
		}
		if n := len(doc.Minified()); n >= iampolicy.ManagedPolicyMaxChars {
			t.Errorf("%s is %d characters with a 100-character cluster name", p.Short, n)
		}
	}
	m := load(t, ".")
	params2 := map[string]bool{}
	for _, f := range m.files {
		for _, b := range f.Body.(*hclsyntax.Body).Blocks {
			if b.Type == "locals" {
				if a, ok := b.Body.Attributes["policy_params"]; ok {
					if obj, ok := a.Expr.(*hclsyntax.ObjectConsExpr); ok {
						for _, item := range obj.Items {
							params2[strings.TrimSpace(hcl.ExprAsKeyword(item.KeyExpr))] = true
						}
					}
				}
			}
		}
	}
	for k := range vars {
		if !params2[k] {
			t.Errorf("local.policy_params does not fill ${%s}", k)
		}
	}
	if got := attrText(t, m.resources["aws_iam_policy.controller"], "for_each"); got != "local.controller_policies" {
		t.Errorf("aws_iam_policy.controller for_each = %s", got)
	}
	if got := attrText(t, m.resources["aws_iam_role_policy_attachment.controller"], "for_each"); got != "aws_iam_policy.controller" {
		t.Errorf("the attachments do not cover every policy: for_each = %s", got)
	}
}

// TestQueuePolicyAdmitsOnlyThisAccountsRules: the send statement is
// conditioned on aws:SourceArn (the module's rules) and aws:SourceAccount.
func TestQueuePolicyAdmitsOnlyThisAccountsRules(t *testing.T) {
	m := load(t, ".")
	doc := m.data["aws_iam_policy_document.queue"]
	if doc == nil {
		t.Fatal("no aws_iam_policy_document.queue")
	}
	if got := attrText(t, m.resources["aws_sqs_queue_policy.interruption"], "policy"); got != "data.aws_iam_policy_document.queue[0].json" {
		t.Errorf("the queue policy is %s, not the checked document", got)
	}
	var send *hclsyntax.Block
	for _, s := range doc.Body.Blocks {
		if s.Type == "statement" && strings.Contains(attrText(t, s, "actions"), "sqs:SendMessage") {
			send = s
		}
	}
	if send == nil {
		t.Fatal("no statement allows sqs:SendMessage")
	}
	conds := map[string]string{}
	for _, c := range send.Body.Blocks {
		if c.Type == "condition" {
			conds[strings.Trim(attrText(t, c, "variable"), `"`)] = attrText(t, c, "test") + " " + attrText(t, c, "values")
		}
	}
	if got := conds["aws:SourceArn"]; !strings.HasPrefix(got, `"ArnEquals"`) || !strings.Contains(got, "aws_cloudwatch_event_rule.interruption") {
		t.Errorf("aws:SourceArn condition is %q, want ArnEquals on the module's rules", got)
	}
	if got := conds["aws:SourceAccount"]; !strings.HasPrefix(got, `"StringEquals"`) || !strings.Contains(got, "local.account_id") {
		t.Errorf("aws:SourceAccount condition is %q, want StringEquals on this account", got)
	}
	var principals []string
	for _, p := range send.Body.Blocks {
		if p.Type == "principals" {
			principals = append(principals, attrText(t, p, "identifiers"))
		}
	}
	if len(principals) != 1 || !strings.Contains(principals[0], "events.") {
		t.Errorf("senders %v, want EventBridge only", principals)
	}
}

// event is an EventBridge event of one of the kinds the controller parses.
type event struct {
	kind messages.Kind
	body string
}

var events = []event{
	{messages.KindSpotInterruption, `{"version":"0","id":"1","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","time":"2026-01-01T00:00:00Z","detail":{"instance-id":"i-0123456789abcdef0","instance-action":"terminate"}}`},
	{messages.KindRebalanceRecommendation, `{"version":"0","id":"2","detail-type":"EC2 Instance Rebalance Recommendation","source":"aws.ec2","time":"2026-01-01T00:00:00Z","detail":{"instance-id":"i-0123456789abcdef0"}}`},
	{messages.KindStateChange, `{"version":"0","id":"3","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","time":"2026-01-01T00:00:00Z","detail":{"instance-id":"i-0123456789abcdef0","state":"stopping"}}`},
	{messages.KindScheduledChange, `{"version":"0","id":"4","detail-type":"AWS Health Event","source":"aws.health","time":"2026-01-01T00:00:00Z","detail":{"service":"EC2","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"i-0123456789abcdef0"}]}}`},
}

// matches is EventBridge's matching for patterns of exact values: every
// key of the pattern must be in the event, with one of the listed values
// (nested objects recursively).
func matches(pattern map[string]any, ev map[string]any) bool {
	for k, want := range pattern {
		got, ok := ev[k]
		if !ok {
			return false
		}
		switch w := want.(type) {
		case []any:
			if !slices.ContainsFunc(w, func(v any) bool { return reflect.DeepEqual(v, got) }) {
				return false
			}
		case map[string]any:
			sub, ok := got.(map[string]any)
			if !ok || !matches(w, sub) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// TestEventRulesMatchTheParsedKinds: each of the module's rules matches
// exactly one of the four kinds of event the controller parses, every
// kind has a rule, and each rule targets the queue.
func TestEventRulesMatchTheParsedKinds(t *testing.T) {
	data, err := os.ReadFile("iam/event-rules.json")
	if err != nil {
		t.Fatal(err)
	}
	var rules []struct {
		Name         string
		EventPattern map[string]any
	}
	if err := json.Unmarshal(data, &rules); err != nil {
		t.Fatal(err)
	}
	covered := map[messages.Kind]int{}
	for _, r := range rules {
		n := 0
		for _, e := range events {
			var ev map[string]any
			if err := json.Unmarshal([]byte(e.body), &ev); err != nil {
				t.Fatal(err)
			}
			if matches(r.EventPattern, ev) {
				n++
				covered[e.kind]++
			}
		}
		if n != 1 {
			t.Errorf("rule %s matches %d of the kinds, want 1", r.Name, n)
		}
	}
	for _, e := range events {
		msg, err := messages.Parse([]byte(e.body))
		if err != nil || msg.Kind != e.kind {
			t.Errorf("the controller parses the %s sample as %v (%v)", e.kind, msg, err)
		}
		if covered[e.kind] != 1 {
			t.Errorf("%d rules forward %s events, want 1", covered[e.kind], e.kind)
		}
	}
	m := load(t, ".")
	if got := attrText(t, m.resources["aws_cloudwatch_event_rule.interruption"], "event_pattern"); got != "jsonencode(each.value.eventPattern)" {
		t.Errorf("the rules' patterns are %s, not the checked file's", got)
	}
	if got := attrText(t, m.resources["aws_cloudwatch_event_target.interruption"], "arn"); got != "aws_sqs_queue.interruption[0].arn" {
		t.Errorf("the rules target %s, not the queue", got)
	}
}
