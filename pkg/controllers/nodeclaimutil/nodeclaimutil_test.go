package nodeclaimutil_test

import (
	"errors"
	"math"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
)

func TestHourlyPrice(t *testing.T) {
	tests := []struct {
		name   string
		value  *string
		want   float64
		wantOK bool
	}{
		{"missing", nil, 0, false},
		{"price", ptr("0.192"), 0.192, true},
		{"zero", ptr("0"), 0, true},
		{"negative", ptr("-1"), 0, false},
		{"not a number", ptr("cheap"), 0, false},
		{"NaN", ptr("NaN"), 0, false},
		{"infinite", ptr("+Inf"), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc := &karpv1.NodeClaim{}
			if tt.value != nil {
				nc.Annotations = map[string]string{nodeclaimutil.PriceAnnotationKey: *tt.value}
			}
			got, ok := nodeclaimutil.HourlyPrice(nc)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("HourlyPrice = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestRequeueOnConflictAndEarliest(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Group: karpv1.Group, Resource: "nodeclaims"}, "a", errors.New("changed"))
	res, err := nodeclaimutil.RequeueOnConflict(conflict)
	if err != nil || res.RequeueAfter != nodeclaimutil.ConflictRequeue {
		t.Fatalf("conflict -> %v, %v; want a quick requeue and no error", res, err)
	}
	other := errors.New("boom")
	if _, err := nodeclaimutil.RequeueOnConflict(other); !errors.Is(err, other) {
		t.Fatalf("other error -> %v", err)
	}
	got := nodeclaimutil.Earliest(reconcile.Result{}, reconcile.Result{RequeueAfter: time.Minute}, reconcile.Result{RequeueAfter: time.Second})
	if got.RequeueAfter != time.Second {
		t.Fatalf("Earliest = %v, want 1s", got.RequeueAfter)
	}
	if got := nodeclaimutil.Earliest(reconcile.Result{}); got.RequeueAfter != 0 {
		t.Fatalf("Earliest of no requeues = %v", got)
	}
}

func FuzzHourlyPrice(f *testing.F) {
	for _, s := range []string{"0.0416", "0", "-1", "1e3", "NaN", "Inf", "", "0x1p-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		nc := &karpv1.NodeClaim{}
		nc.Annotations = map[string]string{nodeclaimutil.PriceAnnotationKey: s}
		p, ok := nodeclaimutil.HourlyPrice(nc)
		if !ok {
			return
		}
		if p < 0 || math.IsNaN(p) || math.IsInf(p, 0) {
			t.Fatalf("HourlyPrice(%q) = %v accepted", s, p)
		}
		back, ok := nodeclaimutil.HourlyPrice(&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{
			Annotations: map[string]string{nodeclaimutil.PriceAnnotationKey: nodeclaimutil.FormatPrice(p)}}})
		if !ok || back != p {
			t.Fatalf("FormatPrice does not round-trip %v: %v %v", p, back, ok)
		}
	})
}
