package nodeclaimutil_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
)

func ExampleHourlyPrice() {
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		nodeclaimutil.PriceAnnotationKey: nodeclaimutil.FormatPrice(0.0416),
	}}}
	price, ok := nodeclaimutil.HourlyPrice(nc)
	fmt.Println(price, ok)
	// Output: 0.0416 true
}
