package crds_test

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/robfig/cron/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"pgregory.net/rapid"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	"github.com/dovetail-sh/dovetail/api/crds"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

// schemaOf returns the openAPIV3Schema of the CRD with the given name.
func schemaOf(t *testing.T, name string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	objs, err := crds.Objects()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.Name == name {
			return o.Spec.Versions[0].Schema.OpenAPIV3Schema
		}
	}
	t.Fatalf("no CRD %s", name)
	return nil
}

// walk calls fn for every schema node with its path.
func walk(path string, s *apiextensionsv1.JSONSchemaProps, fn func(string, *apiextensionsv1.JSONSchemaProps)) {
	if s == nil {
		return
	}
	fn(path, s)
	for k, p := range s.Properties {
		walk(path+"."+k, &p, fn)
	}
	if s.Items != nil {
		walk(path+"[]", s.Items.Schema, fn)
	}
	if s.AdditionalProperties != nil {
		walk(path+"{}", s.AdditionalProperties.Schema, fn)
	}
}

func node(t *testing.T, crd, path string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	var found *apiextensionsv1.JSONSchemaProps
	walk("", schemaOf(t, crd), func(p string, s *apiextensionsv1.JSONSchemaProps) {
		if p == path {
			found = s
		}
	})
	if found == nil {
		t.Fatalf("%s: no schema at %s", crd, path)
	}
	return found
}

// TestRulesAreASCII guards against editors and gofmt rewriting quotes in
// the CEL markers (gofmt turns ” in a doc comment into a typographic
// quote, which the apiserver then refuses or, worse, reads differently).
func TestRulesAreASCII(t *testing.T) {
	objs, err := crds.Objects()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range objs {
		walk(o.Name, o.Spec.Versions[0].Schema.OpenAPIV3Schema, func(p string, s *apiextensionsv1.JSONSchemaProps) {
			for _, r := range s.XValidations {
				n++
				for _, c := range r.Rule + r.Message {
					if c > unicode.MaxASCII {
						t.Errorf("%s: rule %q has the non-ASCII character %q", p, r.Rule, c)
						break
					}
				}
				if r.Message == "" {
					t.Errorf("%s: rule %q has no message", p, r.Rule)
				}
			}
		})
	}
	if n < 40 {
		t.Errorf("only %d CEL rules in the CRDs", n)
	}
}

// TestWellKnownAWSLabelsInNodePoolRules checks that the NodePool rules allow
// exactly the karpenter.k8s.aws labels package awsv1 declares well known,
// and the EC2NodeClass's own label (the peer's CRD allows it, and the peer
// writes it on every NodeClaim).
func TestWellKnownAWSLabelsInNodePoolRules(t *testing.T) {
	want := []string{awsv1.LabelNodeClass}
	for _, l := range awsv1.WellKnownLabels {
		if strings.HasPrefix(l, awsv1.Group+"/") {
			want = append(want, l)
		}
	}
	slices.Sort(want)
	listRE := regexp.MustCompile(`x\.key in \[([^\]]*)\]|x in \[([^\]]*)\]`)
	for _, path := range []string{".spec.template.spec.requirements", ".spec.template.metadata.labels"} {
		found := false
		for _, r := range node(t, "nodepools.karpenter.sh", path).XValidations {
			if !strings.Contains(r.Rule, "karpenter.k8s.aws/") {
				continue
			}
			m := listRE.FindStringSubmatch(r.Rule)
			if m == nil {
				t.Fatalf("%s: rule %q has no key list", path, r.Rule)
			}
			var got []string
			for _, q := range strings.Split(m[1]+m[2], ",") {
				got = append(got, strings.Trim(q, "' "))
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s: rule allows %q, awsv1.WellKnownLabels has %q", path, got, want)
			}
			found = true
		}
		if !found {
			t.Errorf("%s: no karpenter.k8s.aws rule", path)
		}
	}
}

// scheduleRegexp is the admission pattern of a budget schedule (the
// peer's: five fields or a macro).
func scheduleRegexp(t *testing.T) *regexp.Regexp {
	t.Helper()
	p := node(t, "nodepools.karpenter.sh", ".spec.disruption.budgets[].schedule").Pattern
	if p == "" {
		t.Fatal("no schedule pattern")
	}
	return regexp.MustCompile(p)
}

// scheduleAdmitted says whether a NodePool with the schedule passes both
// checks: the CRD's pattern at admission and RuntimeValidate after.
func scheduleAdmitted(re *regexp.Regexp, s string) (admission, runtime bool) {
	np := &karpv1.NodePool{}
	np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "1", Schedule: &s}}
	runtime = true
	for _, e := range np.RuntimeValidate() {
		if e.Field == "spec.disruption.budgets[0].schedule" {
			runtime = false
		}
	}
	return re.MatchString(s), runtime
}

// TestScheduleRuleAgreesWithCronParser checks the schedule checks against
// an independent parser (robfig/cron, five-field syntax and descriptors):
// a schedule the parser takes passes both the admission pattern and
// RuntimeValidate; one it refuses is refused by one of them. The pattern
// is the peer's and looser (e.g. "60 * * * *" is admitted and then fails
// RuntimeValidate, as in the peer); the cases the pattern refuses itself
// are counted so that both checks are exercised.
func TestScheduleRuleAgreesWithCronParser(t *testing.T) {
	re := scheduleRegexp(t)
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	schedules := []string{
		"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly",
		"* * * * *", "0 9 * * mon-fri", "0 9 * * MON-FRI", "*/15 * * * *", "0 0 1 1 *",
		"59 23 31 12 6", "0,30 8-18 * * 1-5", "5/10 * * * *", "0 0 ? * sun", "0 0 1,15 * ?",
		"0 0 * jan-mar,oct *", "00 09 01 01 0", "0 0 */2 * *", "1-59/2 * * * *", "0 0 * * 0-6/2",
		"0 12 * * Sat", "0 0 1 Dec *", "*/100 * * * *", "? * * * *", "* * * * 7",
		// Refused.
		"", " ", "* * * *", "60 * * * *", "* 24 * * *", "* * 0 * *", "* * 32 * *",
		"* * * 0 *", "* * * 13 *", "* * * * 8", "*/0 * * * *", "* * * * funday", "@reboot",
		"a b c d e", "1-2-3 * * * *", "*/ * * * *", "-1 * * * *", "5-1 * * * *", "0 0 * * fri-mon",
	}
	// The pattern (the peer's) refuses @every, which the parser takes.
	peerRefuses := map[string]bool{"@every 1h": true}
	for s := range peerRefuses {
		schedules = append(schedules, s)
	}
	byPattern, byRuntime := 0, 0
	for _, s := range schedules {
		_, err := parser.Parse(s)
		admission, runtime := scheduleAdmitted(re, s)
		switch {
		case peerRefuses[s]:
			if admission {
				t.Errorf("%q: admitted, the peer's pattern refuses it", s)
			}
		case err == nil && !(admission && runtime):
			t.Errorf("%q: the cron parser accepts it, but admission=%v runtime=%v", s, admission, runtime)
		case err != nil && admission && runtime:
			t.Errorf("%q: the cron parser refuses it (%v), both checks let it through", s, err)
		case err != nil && !admission:
			byPattern++
		case err != nil:
			byRuntime++
		}
	}
	if byPattern == 0 || byRuntime == 0 {
		t.Errorf("refused by the pattern %d, by RuntimeValidate %d: want both exercised", byPattern, byRuntime)
	}
}

// TestScheduleRuleProperty generates cron-like schedules from a grammar that
// mixes valid and out-of-range tokens, and checks that admission (the
// pattern) never refuses a schedule the cron parser accepts, and that
// admission plus RuntimeValidate refuse every one it refuses.
func TestScheduleRuleProperty(t *testing.T) {
	re := scheduleRegexp(t)
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	months := []string{"jan", "FEB", "mar", "Dec", "foo"}
	days := []string{"sun", "MON", "fri", "Sat", "xyz"}
	var accepted, refused int
	rapid.Check(t, func(t *rapid.T) {
		value := func(field int) string {
			switch {
			case field == 3 && rapid.Bool().Draw(t, "monthName"):
				return rapid.SampledFrom(months).Draw(t, "month")
			case field == 4 && rapid.Bool().Draw(t, "dayName"):
				return rapid.SampledFrom(days).Draw(t, "day")
			default:
				// Mostly small numbers (valid in every field), sometimes
				// out of range.
				return strconv.Itoa(rapid.OneOf(rapid.IntRange(0, 6), rapid.IntRange(0, 70)).Draw(t, "n"))
			}
		}
		item := func(field int) string {
			var s string
			switch rapid.IntRange(0, 3).Draw(t, "kind") {
			case 0:
				s = "*"
			case 1:
				if field == 2 || field == 4 {
					s = "?"
				} else {
					s = "*"
				}
			case 2:
				s = value(field)
			case 3:
				s = value(field) + "-" + value(field)
			}
			if rapid.IntRange(0, 3).Draw(t, "stepped") == 0 {
				s += "/" + strconv.Itoa(rapid.IntRange(0, 30).Draw(t, "step"))
			}
			return s
		}
		var fields []string
		for f := range 5 {
			items := make([]string, rapid.IntRange(1, 3).Draw(t, "items"))
			for i := range items {
				items[i] = item(f)
			}
			fields = append(fields, strings.Join(items, ","))
		}
		s := strings.Join(fields, " ")
		_, err := parser.Parse(s)
		admission, runtime := scheduleAdmitted(re, s)
		if err == nil {
			accepted++
		} else {
			refused++
		}
		if (err == nil) != (admission && runtime) {
			t.Fatalf("%q: admission=%v runtime=%v, cron parser error=%v", s, admission, runtime, err)
		}
	})
	// The generator must exercise both outcomes, or the property is vacuous.
	if accepted == 0 || refused == 0 {
		t.Errorf("generator produced %d accepted and %d refused schedules; want both", accepted, refused)
	}
	t.Logf("%d accepted, %d refused", accepted, refused)
}
