package simulate

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/static"
)

// staticRoom is the static controller's Room (pkg/simulate does not link
// the controllers): the two agree on every case.
func TestStaticRoomIsTheControllers(t *testing.T) {
	for _, limit := range []string{"", "0", "1", "3", "10"} {
		np := &karpv1.NodePool{}
		if limit != "" {
			np.Spec.Limits = karpv1.Limits{"nodes": resource.MustParse(limit)}
		}
		for missing := int64(0); missing <= 4; missing++ {
			for all := int64(0); all <= 5; all++ {
				if got, want := staticRoom(np, missing, all), static.Room(np, missing, all); got != want {
					t.Errorf("limits.nodes %q, missing %d, all %d: room %d, the controller's %d", limit, missing, all, got, want)
				}
			}
		}
	}
}
