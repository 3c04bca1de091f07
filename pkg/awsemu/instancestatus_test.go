package awsemu_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
)

// DescribeInstanceStatus through aws-sdk-go-v2: scheduled events and
// failed checks set on the emulator, every filter with data, InstanceIds,
// IncludeAllInstances, pages, and an instance-retirement that stops the
// instance when it starts.
func TestDescribeInstanceStatusEventsAndChecks(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	e := start(t, awsemu.Options{Clock: clk, TimeScale: 1})
	c := ec2.NewFromConfig(sdkConfig(e))
	ctx := context.Background()
	lt := launchTemplate(t, e, c, "status", "x86_64", "")
	var ids []string
	for range 7 {
		ids = append(ids, launchOne(t, e, c, lt, "m5.large", "on-demand", nil))
	}
	clk.Step(time.Minute) // every instance running
	retiring, rebooting, sick := ids[0], ids[1], ids[2]
	if _, err := e.ScheduleEvent(retiring, awsemu.EventInstanceRetirement, 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ScheduleEvent(rebooting, awsemu.EventSystemReboot, 0); err != nil {
		t.Fatal(err)
	}
	if err := e.SetStatusCheck(sick, "system", "impaired"); err != nil {
		t.Fatal(err)
	}
	if err := e.SetStatusCheck(rebooting, "instance", "impaired"); err != nil {
		t.Fatal(err)
	}
	now := clk.Now()

	describe := func(in *ec2.DescribeInstanceStatusInput) []ec2types.InstanceStatus {
		t.Helper()
		var all []ec2types.InstanceStatus
		p := ec2.NewDescribeInstanceStatusPaginator(c, in)
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatalf("DescribeInstanceStatus %+v: %v", in, err)
			}
			all = append(all, page.InstanceStatuses...)
		}
		return all
	}
	idsOf := func(st []ec2types.InstanceStatus) []string {
		var out []string
		for _, s := range st {
			out = append(out, aws.ToString(s.InstanceId))
		}
		slices.Sort(out)
		return out
	}
	sorted := func(v ...string) []string { v = slices.Clone(v); slices.Sort(v); return v }
	filter := func(name string, values ...string) *ec2.DescribeInstanceStatusInput {
		return &ec2.DescribeInstanceStatusInput{Filters: []ec2types.Filter{{Name: aws.String(name), Values: values}}}
	}

	st := describe(filter("event.code", "instance-retirement"))
	if got := idsOf(st); !slices.Equal(got, []string{retiring}) {
		t.Fatalf("event.code instance-retirement: %v, want [%s]", got, retiring)
	}
	ev := st[0].Events
	if len(ev) != 1 || ev[0].Code != ec2types.EventCodeInstanceRetirement || !strings.HasPrefix(aws.ToString(ev[0].InstanceEventId), "instance-event-") ||
		aws.ToString(ev[0].Description) != "The instance is running on degraded hardware" || ev[0].NotBefore == nil || !ev[0].NotBefore.Equal(now.Add(2*time.Hour)) {
		t.Fatalf("retirement event %+v", ev)
	}
	notBefore := ev[0].NotBefore.UTC().Format("2006-01-02T15:04:05.000Z")
	for _, tc := range []struct {
		in   *ec2.DescribeInstanceStatusInput
		want []string
	}{
		{filter("event.code", "system-reboot", "instance-retirement"), sorted(retiring, rebooting)},
		{filter("event.description", "*degraded*"), []string{retiring}},
		{filter("event.description", "Scheduled system reboot"), []string{rebooting}},
		{filter("event.instance-event-id", aws.ToString(ev[0].InstanceEventId)), []string{retiring}},
		{filter("event.not-before", notBefore), []string{retiring}},
		{filter("event.not-after", "*"), []string{rebooting}},
		{filter("event.not-before-deadline", "*"), []string{rebooting}},
		{filter("system-status.status", "impaired"), []string{sick}},
		{filter("system-status.reachability", "failed"), []string{sick}},
		{filter("instance-status.status", "impaired"), []string{rebooting}},
		{filter("instance-status.reachability", "failed"), []string{rebooting}},
		{filter("system-status.status", "ok"), sorted(slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == sick })...)},
		{filter("attached-ebs-status.status", "ok"), sorted(ids...)},
		{filter("instance-state-name", "running"), sorted(ids...)},
		{filter("instance-state-code", "16"), sorted(ids...)},
		{filter("availability-zone", "no-such-zone-1a"), nil},
		{filter("operator.managed", "false"), sorted(ids...)},
		{&ec2.DescribeInstanceStatusInput{InstanceIds: []string{sick, retiring}}, sorted(sick, retiring)},
		{&ec2.DescribeInstanceStatusInput{MaxResults: aws.Int32(5)}, sorted(ids...)}, // two pages
	} {
		if got := idsOf(describe(tc.in)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", aws.ToString(tc.in.Filters[0].Name)+" "+strings.Join(tc.in.Filters[0].Values, ","), got, tc.want)
		}
	}
	out, err := c.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{MaxResults: aws.Int32(5)})
	if err != nil || len(out.InstanceStatuses) != 5 || aws.ToString(out.NextToken) == "" {
		t.Errorf("MaxResults 5: %d statuses, next %q, %v", len(out.InstanceStatuses), aws.ToString(out.NextToken), err)
	}
	if _, err := c.DescribeInstanceStatus(ctx, filter("event.bogus", "x")); apiCode(t, err) != "InvalidParameterValue" {
		t.Errorf("unknown filter: %v", err)
	}
	if _, err := e.ScheduleEvent(sick, "instance-explode", 0); !errors.Is(err, awsemu.ErrUnknownKind) {
		t.Errorf("unknown event code: %v", err)
	}
	if _, err := e.ScheduleEvent("i-0000000000000000f", awsemu.EventInstanceStop, 0); !errors.Is(err, awsemu.ErrUnknownTarget) {
		t.Errorf("unknown instance: %v", err)
	}

	// The retirement starts: the instance stops and the event is completed.
	clk.Step(2*time.Hour - time.Millisecond)
	if s := stateOf(t, c, retiring); s != "running" {
		t.Errorf("before its retirement starts the instance is %s", s)
	}
	clk.Step(time.Millisecond)
	if s := stateOf(t, c, retiring); s != "stopping" {
		t.Errorf("when its retirement starts the instance is %s", s)
	}
	clk.Step(awsemu.DefaultShutdownDelay)
	if s := stateOf(t, c, retiring); s != "stopped" {
		t.Errorf("after its retirement started the instance is %s", s)
	}
	if got := idsOf(describe(filter("event.code", "instance-retirement"))); len(got) != 0 {
		t.Errorf("a stopped instance is listed without IncludeAllInstances: %v", got)
	}
	all := describe(&ec2.DescribeInstanceStatusInput{IncludeAllInstances: aws.Bool(true), InstanceIds: []string{retiring}})
	if len(all) != 1 || all[0].InstanceState.Name != ec2types.InstanceStateNameStopped || all[0].SystemStatus.Status != ec2types.SummaryStatusNotApplicable ||
		len(all[0].Events) != 1 || !strings.HasPrefix(aws.ToString(all[0].Events[0].Description), "[Completed] ") {
		t.Errorf("retired instance with IncludeAllInstances: %+v", all)
	}

	// ClearFaults removes events and failed checks.
	if f := e.Faults(); len(f.Instances) != 3 {
		t.Errorf("faults list %d instances, want 3: %+v", len(f.Instances), f.Instances)
	}
	e.ClearFaults()
	if got := idsOf(describe(filter("event.code", "*"))); len(got) != 0 {
		t.Errorf("events after ClearFaults: %v", got)
	}
	if got := idsOf(describe(filter("system-status.status", "impaired"))); len(got) != 0 {
		t.Errorf("impaired after ClearFaults: %v", got)
	}
}

// botocore reads the answer by its own model: events with their
// timestamps, status details.
func TestDescribeInstanceStatusThroughBotocore(t *testing.T) {
	e := start(t, awsemu.Options{})
	c := ec2.NewFromConfig(sdkConfig(e))
	lt := launchTemplate(t, e, c, "boto", "x86_64", "")
	id := launchOne(t, e, c, lt, "m5.large", "on-demand", nil)
	eventually(t, 10*time.Second, "instance running", func() bool { return stateOf(t, c, id) == "running" })
	if _, err := e.ScheduleEvent(id, awsemu.EventInstanceStop, 3*time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := e.SetStatusCheck(id, "instance", "impaired"); err != nil {
		t.Fatal(err)
	}
	out := boto(t, e, `
s = client('ec2').describe_instance_status(InstanceIds=['`+id+`'], Filters=[{'Name': 'event.code', 'Values': ['instance-stop']}])['InstanceStatuses'][0]
ev = s['Events'][0]
out['code'] = ev['Code']
out['notBeforeIsTime'] = hasattr(ev['NotBefore'], 'year')
out['eventId'] = ev['InstanceEventId']
out['instance'] = s['InstanceStatus']['Status']
out['detail'] = s['InstanceStatus']['Details'][0]['Status']
out['system'] = s['SystemStatus']['Status']
out['ebs'] = s['AttachedEbsStatus']['Status']
`)
	want := map[string]any{"code": "instance-stop", "notBeforeIsTime": true, "instance": "impaired", "detail": "failed", "system": "ok", "ebs": "ok"}
	for k, v := range want {
		if out[k] != v {
			t.Errorf("botocore read %s = %v, want %v (all: %v)", k, out[k], v, out)
		}
	}
	if s, _ := out["eventId"].(string); !strings.HasPrefix(s, "instance-event-") {
		t.Errorf("event id %v", out["eventId"])
	}
}
