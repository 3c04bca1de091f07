package awsemu_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func stateOf(t testing.TB, c *ec2.Client, id string) string {
	t.Helper()
	out, err := c.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatalf("DescribeInstances %s: %v", id, err)
	}
	return string(out.Reservations[0].Instances[0].State.Name)
}

func launchOne(t testing.TB, e *awsemu.Emulator, c *ec2.Client, lt string, typ string, capacityType string, tags map[string]string) string {
	t.Helper()
	subnets := discoverySubnets(t, c)
	in := fleetInput(lt, subnets, []string{typ}, capacityType)
	var ts []ec2types.Tag
	for k, v := range tags {
		ts = append(ts, ec2types.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	if len(ts) > 0 {
		in.TagSpecifications = []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: ts}}
	}
	out, err := c.CreateFleet(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 1 {
		t.Fatalf("no instance: %+v", out.Errors)
	}
	return out.Instances[0].InstanceIds[0]
}

func TestInstanceLifecycleOnTheInjectedClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	e := start(t, awsemu.Options{Clock: clk, TimeScale: 1, TerminatedRetention: time.Hour})
	c := ec2.NewFromConfig(sdkConfig(e))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := e.Subscribe(ctx)
	lt := launchTemplate(t, e, c, "life", "x86_64", "")
	id := launchOne(t, e, c, lt, "m5.large", "on-demand", nil)

	if s := stateOf(t, c, id); s != "pending" {
		t.Fatalf("new instance is %s", s)
	}
	clk.Step(999 * time.Millisecond) // boot takes at least DefaultBootDelay (1 s)
	if s := stateOf(t, c, id); s != "pending" {
		t.Fatalf("after 999ms the instance is %s", s)
	}
	clk.Step(time.Second + time.Millisecond) // and at most 2 s
	if s := stateOf(t, c, id); s != "running" {
		t.Fatalf("after 2s the instance is %s", s)
	}
	out, err := c.TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	if got := out.TerminatingInstances[0].CurrentState.Name; got != ec2types.InstanceStateNameShuttingDown {
		t.Fatalf("terminate -> %s", got)
	}
	clk.Step(awsemu.DefaultShutdownDelay)
	if s := stateOf(t, c, id); s != "terminated" {
		t.Fatalf("after the shutdown delay the instance is %s", s)
	}
	// Terminating again is not an error and keeps the state.
	out, err = c.TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	if err != nil || out.TerminatingInstances[0].PreviousState.Name != ec2types.InstanceStateNameTerminated {
		t.Fatalf("second terminate: %v %+v", err, out)
	}
	clk.Step(59 * time.Minute)
	if s := stateOf(t, c, id); s != "terminated" {
		t.Fatalf("within retention the instance is %s", s)
	}
	clk.Step(time.Minute)
	_, err = c.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if code := apiCode(t, err); code != "InvalidInstanceID.NotFound" {
		t.Fatalf("after retention: %q", code)
	}

	var seen []string
	timeout := time.After(5 * time.Second)
	for len(seen) < 4 {
		select {
		case ev := <-events:
			if ev.Instance.ID != id {
				t.Fatalf("event for %s", ev.Instance.ID)
			}
			seen = append(seen, ev.Previous+">"+ev.Instance.State)
		case <-timeout:
			t.Fatalf("events so far %v", seen)
		}
	}
	want := []string{">pending", "pending>running", "running>shutting-down", "shutting-down>terminated"}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("events %v, want %v", seen, want)
	}
}

func TestTimeScaleShortensDelays(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	e := start(t, awsemu.Options{Clock: clk, TimeScale: 0.1})
	c := ec2.NewFromConfig(sdkConfig(e))
	lt := launchTemplate(t, e, c, "fast", "x86_64", "")
	id := launchOne(t, e, c, lt, "m5.large", "on-demand", nil)
	clk.Step(99 * time.Millisecond)
	if s := stateOf(t, c, id); s != "pending" {
		t.Fatalf("after 99ms at scale 0.1: %s", s)
	}
	clk.Step(101 * time.Millisecond)
	if s := stateOf(t, c, id); s != "running" {
		t.Fatalf("after 200ms at scale 0.1: %s", s)
	}
}

func TestRealClockRunsInstancesWithoutCalls(t *testing.T) {
	e := start(t, awsemu.Options{TimeScale: 0.01})
	c := ec2.NewFromConfig(sdkConfig(e))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := e.Subscribe(ctx)
	lt := launchTemplate(t, e, c, "background", "x86_64", "")
	id := launchOne(t, e, c, lt, "m5.large", "on-demand", nil)
	// No API call advances the state: the emulator's own timer must.
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Instance.ID == id && ev.Instance.State == "running" {
				return
			}
		case <-deadline:
			t.Fatal("the instance never reported running")
		}
	}
}

func TestDescribeInstancesFiltersAndPages(t *testing.T) {
	// A clock that does not move keeps every instance where the test put
	// it, however slow the machine.
	e := start(t, awsemu.Options{Clock: clocktesting.NewFakeClock(epoch)})
	c := ec2.NewFromConfig(sdkConfig(e))
	ctx := context.Background()
	lt := launchTemplate(t, e, c, "many", "x86_64", "")
	var ids []string
	for i := 0; i < 12; i++ {
		typ, pool := "m5.large", "a"
		if i%3 == 0 {
			typ, pool = "c5.large", "b"
		}
		capacity := "on-demand"
		if i%2 == 0 {
			capacity = "spot"
		}
		ids = append(ids, launchOne(t, e, c, lt, typ, capacity, map[string]string{"karpenter.sh/nodepool": pool, "index": fmt.Sprint(i)}))
	}
	if _, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids[:2]}); err != nil {
		t.Fatal(err)
	}
	f := func(name string, values ...string) ec2types.Filter {
		return ec2types.Filter{Name: aws.String(name), Values: values}
	}
	cases := []struct {
		name    string
		filters []ec2types.Filter
		want    int
	}{
		{"all", nil, 12},
		{"type", []ec2types.Filter{f("instance-type", "c5.large")}, 4},
		{"nodepool tag", []ec2types.Filter{f("tag:karpenter.sh/nodepool", "a")}, 8},
		{"tag key", []ec2types.Filter{f("tag-key", "karpenter.sh/nodepool")}, 12},
		{"not terminating", []ec2types.Filter{f("instance-state-name", "pending", "running")}, 10},
		{"spot", []ec2types.Filter{f("instance-lifecycle", "spot")}, 6},
		{"zone wildcard", []ec2types.Filter{f("availability-zone", "us-east-1*")}, 12},
		{"AND", []ec2types.Filter{f("instance-type", "m5.large"), f("tag:index", "1", "2", "3", "4")}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := 0
			pages := 0
			p := ec2.NewDescribeInstancesPaginator(c, &ec2.DescribeInstancesInput{Filters: tc.filters, MaxResults: aws.Int32(5)})
			for p.HasMorePages() {
				out, err := p.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				pages++
				for _, r := range out.Reservations {
					got += len(r.Instances)
				}
			}
			if got != tc.want {
				t.Errorf("%d instances, want %d", got, tc.want)
			}
			if want := max(1, (tc.want+4)/5); pages != want {
				t.Errorf("%d pages, want %d", pages, want)
			}
		})
	}
	out := boto(t, e, `
ec2 = client('ec2')
n = 0
for page in ec2.get_paginator('describe_instances').paginate(
        Filters=[{'Name': 'tag:karpenter.sh/nodepool', 'Values': ['b']}], PaginationConfig={'PageSize': 5}):
    n += sum(len(r['Instances']) for r in page['Reservations'])
out['b'] = n
`)
	if out["b"] != float64(4) {
		t.Errorf("boto3 paginator: %v instances in pool b, want 4", out["b"])
	}
}

func TestCreateTags(t *testing.T) {
	e := start(t, awsemu.Options{})
	c := ec2.NewFromConfig(sdkConfig(e))
	ctx := context.Background()
	lt := launchTemplate(t, e, c, "tags", "x86_64", "")
	id := launchOne(t, e, c, lt, "m5.large", "on-demand", map[string]string{"keep": "1", "Name": "old"})
	_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: []ec2types.Tag{
		{Key: aws.String("Name"), Value: aws.String("default-abcde")},
		{Key: aws.String("karpenter.sh/nodeclaim"), Value: aws.String("default-abcde")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := e.Instances()[0].Tags
	want := map[string]string{"keep": "1", "Name": "default-abcde", "karpenter.sh/nodeclaim": "default-abcde"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("tags %v, want %v", got, want)
	}
	// All or nothing: one unknown id fails the call and tags nothing.
	_, err = c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id, "i-0123456789abcdef0"}, Tags: []ec2types.Tag{{Key: aws.String("x"), Value: aws.String("y")}}})
	if code := apiCode(t, err); code != "InvalidInstanceID.NotFound" {
		t.Errorf("unknown id: %q", code)
	}
	if _, ok := e.Instances()[0].Tags["x"]; ok {
		t.Error("a failed CreateTags tagged the instance")
	}
	if err := cli(t, e, nil, "ec2", "create-tags", "--resources", id, "--tags", "Key=team,Value=b"); err != nil {
		t.Fatal(err)
	}
	if e.Instances()[0].Tags["team"] != "b" {
		t.Errorf("aws ec2 create-tags did not tag: %v", e.Instances()[0].Tags)
	}
}
