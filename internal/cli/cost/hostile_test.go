package cost_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/internal/cli/cost"
	"github.com/dovetail-sh/dovetail/internal/testutil/hostile"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
)

// TestCostBoundsValidatesAndDatesItsRecord is issue 34 items 6 and 2: a
// record with numbers beyond any fleet (1.7e308, -1e308), an hour dated
// 9999 or bytes that do not parse is reported "corrupt" (not "not found")
// and not summed; -o json exits 0 even when NodeClaims carry a price of
// 1.7e308; a record key with escapes and CR/LF cannot forge a TOTAL row.
func TestCostBoundsValidatesAndDatesItsRecord(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	ns := env.Namespace()
	ctx := context.Background()
	env.Create(controllerstest.EC2NodeClass("default"))
	env.Create(controllerstest.NodePool("web"))
	for _, name := range []string{"huge-1", "huge-2"} {
		nc := controllerstest.NodeClaim(name, "web")
		nc.Labels[karpv1.CapacityTypeLabelKey] = karpv1.CapacityTypeOnDemand
		nc.Labels[corev1.LabelInstanceTypeStable] = "m5.large"
		nc.Annotations = map[string]string{karpv1.AnnotationPricePerHour: "1.7e308"}
		env.Create(nc)
	}
	now := env.Clock.Now()
	hour := now.Truncate(3600e9).Unix() - 3600
	record := func(data string) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dovetail-cost"}}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err == nil {
			cm.Data = map[string]string{"record.json": data}
			if err := env.Client.Update(ctx, cm); err != nil {
				t.Fatal(err)
			}
			return
		}
		cm.Data = map[string]string{"record.json": data}
		env.Create(cm)
	}
	run := func(args ...string) (string, string, error) {
		var stdout, stderr bytes.Buffer
		cmd := cost.NewCmd(func(ctx context.Context, o *cost.Options) error {
			o.Now = env.Clock.Now
			return cost.Run(ctx, o)
		})
		cmd.SetOut(&stdout)
		cmd.SetErr(&stderr)
		cmd.SetArgs(append([]string{"--kubeconfig", cp.KubeconfigPath(), "--namespace", ns, "--no-bound"}, args...))
		err := cmd.ExecuteContext(ctx)
		return stdout.String(), stderr.String(), err
	}
	through := now.UTC().Format("2006-01-02T15:04:05Z")
	cell := func(c string) string {
		return `{"v":1,"through":"` + through + `","keys":[{"pool":"web"}],"hours":[{"h":` + itoa(hour) + `,"c":[` + c + `]}]}`
	}
	for name, data := range map[string]string{
		"garbage":      "{not json",
		"1.7e308":      cell(`[0,1.7e308,0,1],[0,1.7e308,0,1]`),
		"-1e308":       cell(`[0,-1e308,0,1]`),
		"hour in 9999": `{"v":1,"through":"` + through + `","keys":[{"pool":"web"}],"hours":[{"h":253402297200,"c":[[0,5,0,1]]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			record(data)
			stdout, stderr, err := run("-o", "json")
			if err != nil {
				t.Fatalf("-o json: %v\n%s", err, stderr)
			}
			var rep cost.Report
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatal(err)
			}
			if !rep.Record.Corrupt || rep.Record.Found || !strings.Contains(rep.Record.Note, "corrupt") || rep.Total.Spent != 0 {
				t.Errorf("record %+v, spent %v: want corrupt, nothing summed", rep.Record, rep.Total.Spent)
			}
			if rep.Total.PricePerHour > 1e6 {
				t.Errorf("$/h now %v: a 1.7e308 price annotation was summed", rep.Total.PricePerHour)
			}
			stdout, _, err = run()
			if err != nil || !strings.Contains(stdout, "Record: "+ns+"/dovetail-cost corrupt") || strings.Contains(stdout, "not found") {
				t.Errorf("text (%v):\n%s\nwant the record called corrupt", err, stdout)
			}
		})
	}
	t.Run("hostile key", func(t *testing.T) {
		key, _ := json.Marshal(hostile.Name)
		record(`{"v":1,"through":"` + through + `","keys":[{"pool":` + string(key) + `}],"hours":[{"h":` + itoa(hour) + `,"c":[[0,5,0,1]]}]}`)
		stdout, stderr, err := run()
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		if n := hostile.ControlBytes(stdout); n != 0 {
			t.Errorf("text holds %d control bytes:\n%q", n, stdout)
		}
		for _, l := range strings.Split(stdout, "\n") {
			if strings.HasPrefix(l, "TOTAL") && !strings.Contains(l, "5.0000") {
				t.Errorf("a forged TOTAL line: %q", l)
			}
		}
		stdout, _, err = run("-o", "json")
		if err != nil || !strings.Contains(stdout, `evil\u001b]0;pwned`) {
			t.Errorf("json (%v) does not keep the exact key:\n%s", err, stdout)
		}
	})
}

func itoa(v int64) string { b, _ := json.Marshal(v); return string(b) }
