package awsemu_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
)

// RebootInstances through aws-sdk-go-v2: bad and unknown ids fail the
// whole call as EC2's errors; a running instance reboots in place (still
// running, its instance check "initializing" until the reboot ends, then
// a new boot id); a node fault that clears on reboot is gone after it, one
// that persists stays; a terminated instance is ignored.
func TestRebootInstances(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	e := start(t, awsemu.Options{Clock: clk, TimeScale: 1})
	c := ec2.NewFromConfig(sdkConfig(e))
	ctx := context.Background()
	lt := launchTemplate(t, e, c, "reboot", "x86_64", "")
	transient := launchOne(t, e, c, lt, "m5.large", "on-demand", nil)
	persistent := launchOne(t, e, c, lt, "m5.large", "on-demand", nil)
	gone := launchOne(t, e, c, lt, "m5.large", "on-demand", nil)
	clk.Step(time.Minute)

	for _, tc := range []struct {
		ids  []string
		code string
	}{
		{[]string{"i-nope"}, "InvalidInstanceID.Malformed"},
		{[]string{transient, "i-0123456789abcdef0"}, "InvalidInstanceID.NotFound"},
	} {
		_, err := c.RebootInstances(ctx, &ec2.RebootInstancesInput{InstanceIds: tc.ids})
		if got := apiCode(t, err); got != tc.code {
			t.Errorf("RebootInstances %v: error code %q, want %q", tc.ids, got, tc.code)
		}
	}
	if in, _ := e.Instance(transient); in.Reboots != 0 || !in.RebootingUntil.IsZero() {
		t.Fatalf("a failed call rebooted %s: %+v", transient, in)
	}

	if err := e.SetNodeFault(transient, &awsemu.NodeFault{Type: "AcceleratedHardwareReady", Status: "False", Reason: "NvidiaXID63Error", ClearsOnReboot: true}); err != nil {
		t.Fatal(err)
	}
	if err := e.SetNodeFault(persistent, &awsemu.NodeFault{Type: "AcceleratedHardwareReady", Status: "False", Reason: "NvidiaXID63Error"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{gone}}); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Minute)
	out, err := c.RebootInstances(ctx, &ec2.RebootInstancesInput{InstanceIds: []string{transient, persistent, gone}})
	if err != nil || out == nil {
		t.Fatalf("RebootInstances: %v", err)
	}
	instanceCheck := func(id string) ec2types.SummaryStatus {
		t.Helper()
		st, err := c.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{InstanceIds: []string{id}})
		if err != nil || len(st.InstanceStatuses) != 1 {
			t.Fatalf("DescribeInstanceStatus %s: %v (%d answers)", id, err, len(st.InstanceStatuses))
		}
		s := st.InstanceStatuses[0]
		if s.InstanceState.Name != ec2types.InstanceStateNameRunning {
			t.Errorf("%s is %s while rebooting, want running", id, s.InstanceState.Name)
		}
		return s.InstanceStatus.Status
	}
	if got := instanceCheck(transient); got != ec2types.SummaryStatusInitializing {
		t.Errorf("instance check of a rebooting instance %q, want initializing", got)
	}
	if in, _ := e.Instance(transient); awsemu.BootID(in) != transient {
		t.Errorf("boot id %q before the reboot ends, want %q", awsemu.BootID(in), transient)
	}
	clk.Step(time.Minute)
	if got := instanceCheck(transient); got != ec2types.SummaryStatusOk {
		t.Errorf("instance check after the reboot %q, want ok", got)
	}
	in, _ := e.Instance(transient)
	if in.Reboots != 1 || awsemu.BootID(in) == transient {
		t.Errorf("after one reboot: %d reboots, boot id %q", in.Reboots, awsemu.BootID(in))
	}
	if in.NodeFault != nil {
		t.Errorf("the fault that clears on reboot stayed: %+v", in.NodeFault)
	}
	if p, _ := e.Instance(persistent); p.Reboots != 1 || p.NodeFault == nil {
		t.Errorf("persistent fault: %d reboots, fault %+v; want 1 reboot and the fault kept", p.Reboots, p.NodeFault)
	}
	if g, _ := e.Instance(gone); g.Reboots != 0 || g.State == awsemu.StateRunning {
		t.Errorf("the terminated instance: %d reboots, state %s", g.Reboots, g.State)
	}
	// The fault shows in Faults() and clears with ClearFaults.
	if f := e.Faults(); len(f.Instances) != 1 || f.Instances[0].InstanceID != persistent || f.Instances[0].NodeFault == nil {
		t.Errorf("Faults().Instances = %+v, want only %s with its node fault", f.Instances, persistent)
	}
	e.ClearFaults()
	if p, _ := e.Instance(persistent); p.NodeFault != nil {
		t.Errorf("ClearFaults left the node fault %+v", p.NodeFault)
	}
}
