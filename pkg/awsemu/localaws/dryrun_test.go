package localaws_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	ncstatus "github.com/dovetail-sh/dovetail/pkg/controllers/nodeclass/status"
	awsprovider "github.com/dovetail-sh/dovetail/pkg/providers/aws"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/nodeclass"
)

// The node class status controller, through the real provider, reports a
// launch action the controller may not use as ValidationSucceeded=False
// (the class un-Ready) and clears it once EC2 allows the dry run again;
// with DisableDryRun no dry-run launch call reaches EC2.
func TestDryRunValidationThroughStatusController(t *testing.T) {
	for _, disable := range []bool{false, true} {
		t.Run(map[bool]string{false: "dry-run", true: "disabled"}[disable], func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			emu, err := awsemu.Start(ctx, awsemu.Options{
				ClusterName: "test", TimeScale: 0.01, ClusterEndpoint: "https://test.example.invalid",
				ClusterCA: []byte("-----BEGIN CERTIFICATE-----\nTUlJQ0VS\n-----END CERTIFICATE-----\n"),
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = emu.Close() })
			if err := emu.DenyAction("ec2:CreateFleet"); err != nil {
				t.Fatal(err)
			}
			env := controllerstest.New(t, cp.RESTConfig())
			p, err := awsprovider.New(ctx, emu.AWSConfig(), awsprovider.Options{
				ClusterName: "test", Reader: env.Client, Clock: env.Clock, DisableDryRun: disable,
			})
			if err != nil {
				t.Fatal(err)
			}
			env.Start(ncstatus.NewController(env.Manager.GetClient(), p.Resolver(), env.Recorder(), 200*time.Millisecond))
			class := controllerstest.EC2NodeClass(env.Prefix)
			env.Create(class)
			validation := func() metav1.Condition {
				if c := class.GetCondition(awsv1.ConditionTypeValidationSucceeded); c != nil {
					return *c
				}
				return metav1.Condition{}
			}
			dryRuns := func() (n int) {
				for _, c := range emu.Calls() {
					if c.Action == "ec2:CreateFleet" || c.Action == "ec2:CreateLaunchTemplate" || c.Action == "ec2:RunInstances" {
						n++
					}
				}
				return n
			}
			if disable {
				env.Eventually("Ready without dry runs", func() (bool, error) {
					err := env.Get(class)
					return class.IsTrue(awsv1.ConditionTypeReady) && validation().Status == metav1.ConditionTrue, err
				})
				if n := dryRuns(); n != 0 {
					t.Fatalf("%d dry-run launch calls with DisableDryRun, want 0", n)
				}
				return
			}
			env.Eventually("ValidationSucceeded=False/CreateFleetAuthCheckFailed", func() (bool, error) {
				err := env.Get(class)
				c := validation()
				return c.Status == metav1.ConditionFalse && c.Reason == nodeclass.ReasonCreateFleetAuthCheckFailed, err
			})
			if class.IsTrue(awsv1.ConditionTypeReady) {
				t.Fatal("class Ready while CreateFleet is unauthorized")
			}
			// Refreshes within the failure's lifetime do not call EC2 again.
			calls := dryRuns()
			time.Sleep(time.Second)
			if n := dryRuns(); n != calls {
				t.Fatalf("%d dry-run calls during refreshes of an unchanged class, want %d", n, calls)
			}
			emu.ClearFaults()
			env.Clock.Step(nodeclass.DefaultDryRunFailureTTL + time.Second)
			env.Eventually("Ready once CreateFleet is allowed", func() (bool, error) {
				err := env.Get(class)
				return class.IsTrue(awsv1.ConditionTypeReady) && validation().Status == metav1.ConditionTrue, err
			})
		})
	}
}
