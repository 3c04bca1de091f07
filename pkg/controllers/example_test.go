package controllers_test

import (
	"fmt"
	"time"

	"k8s.io/utils/clock"

	"github.com/dovetail-sh/dovetail/pkg/controllers"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/metrics"
	"github.com/dovetail-sh/dovetail/pkg/state/unavailable"
)

func ExampleNewControllers() {
	clk := clock.RealClock{}
	ctrls, err := controllers.NewControllers(controllers.Deps{
		Cloud:       controllerstest.NewCloud(),
		Clock:       clk,
		Metrics:     metrics.NewRegistry(),
		Unavailable: unavailable.New(clk, 0),
		// Client and Recorder come from the manager (see pkg/operator);
		// NodeClassResolver is nil here, so nodeclass.status is left out.
	}, controllers.Config{LaunchTimeout: 5 * time.Minute, RegistrationTimeout: 15 * time.Minute})
	if err != nil {
		panic(err)
	}
	for _, c := range ctrls {
		fmt.Println(c.Name())
	}
	// Output:
	// nodepool.hash
	// nodepool.readiness
	// nodepool.counter
	// provisioning
	// nodeclaim.lifecycle
	// nodeclaim.drift
	// nodeclaim.podevents
	// nodeclaim.expiration
	// nodeclaim.termination
	// node.termination
	// nodeclaim.garbagecollection
	// interruption
	// disruption
	// metrics.pod
	// cloudprovider.metrics
}
