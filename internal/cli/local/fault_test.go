package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/awsemu/localaws"
)

// runDovetail runs the built binary and returns stdout, stderr and the
// exit code.
func runDovetail(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(dovetail, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	}
	t.Fatalf("running dovetail %v: %v", args, err)
	return "", "", -1
}

// emulatorDir starts an emulator and writes DIR/aws.env and
// DIR/aws-admin-token for it, as `local up` does, without the rest of the
// stack.
func emulatorDir(t *testing.T) (*awsemu.Emulator, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e, err := awsemu.Start(ctx, awsemu.Options{TimeScale: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	dir := t.TempDir()
	if err := localaws.WriteEnv(filepath.Join(dir, localaws.EnvFile), map[string]string{
		localaws.VarEndpoint: e.Endpoint(), localaws.VarRegion: "us-east-1",
	}); err != nil {
		t.Fatal(err)
	}
	if err := localaws.WriteToken(filepath.Join(dir, localaws.TokenFile), e.AdminToken()); err != nil {
		t.Fatal(err)
	}
	return e, dir
}

func TestFaultCommands(t *testing.T) {
	e, dir := emulatorDir(t)
	// A directory whose token is wrong, and one without a token file: the
	// emulator refuses the first, the command the second.
	wrongToken, noToken := t.TempDir(), t.TempDir()
	for _, d := range []string{wrongToken, noToken} {
		if err := localaws.WriteEnv(filepath.Join(d, localaws.EnvFile), map[string]string{localaws.VarEndpoint: e.Endpoint()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := localaws.WriteToken(filepath.Join(wrongToken, localaws.TokenFile), strings.Repeat("0", 64)); err != nil {
		t.Fatal(err)
	}
	unchanged := func(t *testing.T) {
		if f := e.Faults(); f.ThrottleFraction != 0 {
			t.Errorf("a refused command changed the faults: %+v", f)
		}
	}
	cases := []struct {
		name  string
		args  []string
		code  int
		check func(t *testing.T, stdout, stderr string)
	}{
		{
			name: "ice", args: []string{"local", "fault", "ice", "--dir", dir, "--instance-type", "m5.large", "--zone", "us-east-1a", "--capacity-type", "spot"},
			check: func(t *testing.T, stdout, _ string) {
				want := awsemu.ICERule{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "spot"}
				if f := e.Faults(); len(f.ICE) != 1 || f.ICE[0] != want {
					t.Errorf("emulator faults %+v", f)
				}
				var printed awsemu.Faults
				if err := json.Unmarshal([]byte(stdout), &printed); err != nil || len(printed.ICE) != 1 {
					t.Errorf("stdout %q: %v", stdout, err)
				}
			},
		},
		{
			name: "throttle", args: []string{"local", "fault", "throttle", "--dir", dir, "--fraction", "0.25", "--seed", "5"},
			check: func(t *testing.T, _, _ string) {
				if f := e.Faults(); f.ThrottleFraction != 0.25 || f.ThrottleSeed != 5 {
					t.Errorf("emulator faults %+v", f)
				}
			},
		},
		{
			name: "capacity", args: []string{"local", "fault", "capacity", "--dir", dir, "--instance-type", "m5.large", "--capacity-type", "spot", "--spare", "0"},
			check: func(t *testing.T, _, _ string) {
				if got := e.SpareCapacity("m5.large", "us-east-1a", "spot"); got != 0 {
					t.Errorf("spare capacity of m5.large spot = %d, want 0", got)
				}
			},
		},
		{
			name: "deny", args: []string{"local", "fault", "deny", "--dir", dir, "--action", "ec2:DescribeSpotPriceHistory"},
			check: func(t *testing.T, _, _ string) {
				if f := e.Faults(); len(f.Denied) != 1 || f.Denied[0] != "ec2:DescribeSpotPriceHistory" {
					t.Errorf("emulator faults %+v", f)
				}
			},
		},
		{name: "deny an unknown action", args: []string{"local", "fault", "deny", "--dir", dir, "--action", "ec2:MakeCoffee"}, code: cmdutil.ExitError,
			check: func(t *testing.T, _, stderr string) { mustContain(t, stderr, "ec2:MakeCoffee") }},
		{
			name: "clear", args: []string{"local", "fault", "clear", "--dir", dir},
			check: func(t *testing.T, _, _ string) {
				if f := e.Faults(); len(f.ICE) != 0 || f.ThrottleFraction != 0 || len(f.Capacity) != 0 || len(f.Denied) != 0 {
					t.Errorf("emulator faults %+v", f)
				}
			},
		},
		{name: "ice without a type", args: []string{"local", "fault", "ice", "--dir", dir}, code: cmdutil.ExitBadInput,
			check: func(t *testing.T, _, stderr string) { mustContain(t, stderr, "--instance-type") }},
		{name: "bad capacity type", args: []string{"local", "fault", "ice", "--dir", dir, "--instance-type", "m5.large", "--capacity-type", "reserved"}, code: cmdutil.ExitBadInput,
			check: func(t *testing.T, _, stderr string) { mustContain(t, stderr, "--capacity-type") }},
		{name: "spare out of range", args: []string{"local", "fault", "capacity", "--dir", dir, "--spare", "101"}, code: cmdutil.ExitBadInput,
			check: func(t *testing.T, _, stderr string) { mustContain(t, stderr, "--spare") }},
		{name: "spare required", args: []string{"local", "fault", "capacity", "--dir", dir}, code: cmdutil.ExitBadInput,
			check: func(t *testing.T, _, stderr string) { mustContain(t, stderr, "--spare") }},
		{name: "fraction out of range", args: []string{"local", "fault", "throttle", "--dir", dir, "--fraction", "2"}, code: cmdutil.ExitBadInput,
			check: func(t *testing.T, _, stderr string) { mustContain(t, stderr, "--fraction") }},
		{name: "fraction NaN", args: []string{"local", "fault", "throttle", "--dir", dir, "--fraction", "NaN"}, code: cmdutil.ExitBadInput,
			check: func(t *testing.T, _, stderr string) { mustContain(t, stderr, "--fraction") }},
		{name: "wrong token", args: []string{"local", "fault", "throttle", "--dir", wrongToken, "--fraction", "0.5"}, code: cmdutil.ExitError,
			check: func(t *testing.T, _, stderr string) {
				mustContain(t, stderr, "wrong token")
				mustContain(t, stderr, "401")
				unchanged(t)
			}},
		{name: "no token file", args: []string{"local", "fault", "throttle", "--dir", noToken, "--fraction", "0.5"}, code: cmdutil.ExitError,
			check: func(t *testing.T, _, stderr string) {
				mustContain(t, stderr, filepath.Join(noToken, localaws.TokenFile))
				unchanged(t)
			}},
		{name: "no stack in the directory", args: []string{"local", "fault", "clear", "--dir", t.TempDir()}, code: cmdutil.ExitError,
			check: func(t *testing.T, _, stderr string) { mustContain(t, stderr, "dovetail local up") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runDovetail(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			tc.check(t, stdout, stderr)
		})
	}
}

func mustContain(t *testing.T, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%q does not mention %q", s, sub)
	}
}

// launchInstance launches one m5.large spot instance through the SDK.
func launchInstance(t *testing.T, e *awsemu.Emulator) awsemu.Instance {
	t.Helper()
	ctx := context.Background()
	c := ec2.NewFromConfig(e.AWSConfig())
	img := e.SSMParameters()["/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/recommended/image_id"]
	if _, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("cli"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String(img)}}); err != nil {
		t.Fatal(err)
	}
	subnets, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.CreateFleet(ctx, &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String("cli"), Version: aws.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m5.large", SubnetId: subnets.Subnets[0].SubnetId}},
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: "spot"},
	})
	if err != nil || len(out.Instances) != 1 {
		t.Fatalf("CreateFleet: %v", err)
	}
	in, _ := e.Instance(out.Instances[0].InstanceIds[0])
	return in
}

func TestInterruptCommand(t *testing.T) {
	e, dir := emulatorDir(t)
	ctx := context.Background()
	cfg := e.AWSConfig()
	in := launchInstance(t, e)

	stdout, stderr, code := runDovetail(t, "local", "interrupt", in.PrivateDNSName, "--kind", "rebalance", "--dir", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	mustContain(t, stdout, "rebalance")
	q := sqs.NewFromConfig(cfg)
	url, _ := e.QueueURL("local")
	msgs, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 5})
	if err != nil || len(msgs.Messages) != 1 {
		t.Fatalf("queue: %v %+v", err, msgs)
	}
	var ev awsemu.Event
	if err := json.Unmarshal([]byte(aws.ToString(msgs.Messages[0].Body)), &ev); err != nil || ev.DetailType != "EC2 Instance Rebalance Recommendation" {
		t.Errorf("message %s: %v", aws.ToString(msgs.Messages[0].Body), err)
	}

	// Without the right token the emulator sends nothing.
	wrong := t.TempDir()
	if err := localaws.WriteEnv(filepath.Join(wrong, localaws.EnvFile), map[string]string{localaws.VarEndpoint: e.Endpoint()}); err != nil {
		t.Fatal(err)
	}
	if err := localaws.WriteToken(filepath.Join(wrong, localaws.TokenFile), strings.Repeat("1", 64)); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runDovetail(t, "local", "interrupt", in.ID, "--kind", "rebalance", "--dir", wrong); code != cmdutil.ExitError || !strings.Contains(stderr, "wrong token") {
		t.Errorf("wrong token: exit %d, stderr %q", code, stderr)
	}
	if msgs, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 1}); err != nil || len(msgs.Messages) != 0 {
		t.Errorf("after a refused interrupt the queue has %+v (%v)", msgs, err)
	}

	if _, stderr, code := runDovetail(t, "local", "interrupt", "ip-10-1-2-3.ec2.internal", "--kind", "rebalance", "--dir", dir); code != cmdutil.ExitError || !strings.Contains(stderr, "ip-10-1-2-3") {
		t.Errorf("unknown node: exit %d, stderr %q", code, stderr)
	}
	if _, stderr, code := runDovetail(t, "local", "interrupt", in.ID, "--kind", "meteor", "--dir", dir); code != cmdutil.ExitBadInput || !strings.Contains(stderr, "spot-interruption") {
		t.Errorf("bad kind: exit %d, stderr %q", code, stderr)
	}
	if _, _, code := runDovetail(t, "local", "interrupt", "--kind", "rebalance", "--dir", dir); code != cmdutil.ExitBadInput {
		t.Errorf("no target: exit %d", code)
	}
}

func TestEventAndStatusCheckCommands(t *testing.T) {
	e, dir := emulatorDir(t)
	ctx := context.Background()
	c := ec2.NewFromConfig(e.AWSConfig())
	in := launchInstance(t, e)
	statusOf := func(name, value string) []ec2types.InstanceStatus {
		t.Helper()
		out, err := c.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{IncludeAllInstances: aws.Bool(true),
			Filters: []ec2types.Filter{{Name: aws.String(name), Values: []string{value}}}})
		if err != nil {
			t.Fatal(err)
		}
		return out.InstanceStatuses
	}
	before := time.Now()
	stdout, stderr, code := runDovetail(t, "local", "fault", "event", in.PrivateDNSName, "--code", "instance-retirement", "--in", "3h", "--dir", dir)
	if code != 0 {
		t.Fatalf("fault event: exit %d: %s %s", code, stdout, stderr)
	}
	var printed awsemu.Faults
	if err := json.Unmarshal([]byte(stdout), &printed); err != nil || len(printed.Instances) != 1 || printed.Instances[0].InstanceID != in.ID {
		t.Errorf("stdout %q: %v", stdout, err)
	}
	st := statusOf("event.code", "instance-retirement")
	if len(st) != 1 || aws.ToString(st[0].InstanceId) != in.ID || len(st[0].Events) != 1 {
		t.Fatalf("after fault event: %+v", st)
	}
	// The start is 3 hours away on the emulator's clock (not scaled).
	if nb := st[0].Events[0].NotBefore; nb == nil || nb.Before(before.Add(3*time.Hour-time.Minute)) || nb.After(time.Now().Add(3*time.Hour+time.Minute)) {
		t.Errorf("event starts %v, want about 3h from %v", st[0].Events[0].NotBefore, before)
	}
	if _, stderr, code := runDovetail(t, "local", "fault", "status-check", in.ID, "--check", "system", "--dir", dir); code != 0 {
		t.Fatalf("fault status-check: exit %d: %s", code, stderr)
	}
	if st := statusOf("system-status.status", "impaired"); len(st) != 1 || aws.ToString(st[0].InstanceId) != in.ID {
		t.Errorf("after fault status-check: %+v", st)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"bad code", []string{"local", "fault", "event", in.ID, "--code", "meteor"}, cmdutil.ExitBadInput, "instance-retirement"},
		{"no target", []string{"local", "fault", "event", "--code", "instance-stop"}, cmdutil.ExitBadInput, "INSTANCE_OR_NODE"},
		{"negative start", []string{"local", "fault", "event", in.ID, "--code", "instance-stop", "--in", "-1h"}, cmdutil.ExitBadInput, "--in"},
		{"unknown instance", []string{"local", "fault", "event", "i-0000000000000000f", "--code", "instance-stop"}, cmdutil.ExitError, "i-0000000000000000f"},
		{"bad check", []string{"local", "fault", "status-check", in.ID, "--check", "disk"}, cmdutil.ExitBadInput, "--check"},
		{"bad status", []string{"local", "fault", "status-check", in.ID, "--check", "system", "--status", "meh"}, cmdutil.ExitBadInput, "--status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runDovetail(t, append(tc.args, "--dir", dir)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, stderr)
			}
			mustContain(t, stderr, tc.want)
		})
	}
	if _, stderr, code := runDovetail(t, "local", "fault", "clear", "--dir", dir); code != 0 {
		t.Fatalf("fault clear: exit %d: %s", code, stderr)
	}
	if st := statusOf("event.code", "*"); len(st) != 0 {
		t.Errorf("events after fault clear: %+v", st)
	}
}

// `local fault node` sets the node fault of an instance (the condition in
// the peer's TYPE=STATUS[/REASON] format, backdated by --age, cleared by a
// reboot with --clears-on-reboot), --clear removes it, bad input exits 2.
func TestNodeFaultCommand(t *testing.T) {
	e, dir := emulatorDir(t)
	in := launchInstance(t, e)
	before := time.Now()
	stdout, stderr, code := runDovetail(t, "local", "fault", "node", in.PrivateDNSName, "--condition", "AcceleratedHardwareReady=False/NvidiaXID63Error",
		"--age", "11m", "--clears-on-reboot", "--dir", dir)
	if code != 0 {
		t.Fatalf("fault node: exit %d: %s %s", code, stdout, stderr)
	}
	got, _ := e.Instance(in.ID)
	f := got.NodeFault
	if f == nil || f.Type != "AcceleratedHardwareReady" || f.Status != "False" || f.Reason != "NvidiaXID63Error" || !f.ClearsOnReboot {
		t.Fatalf("node fault %+v", f)
	}
	if age := before.Sub(f.Since); age < 10*time.Minute || age > 12*time.Minute {
		t.Errorf("fault since %v, want about 11m before %v", f.Since, before)
	}
	var printed awsemu.Faults
	if err := json.Unmarshal([]byte(stdout), &printed); err != nil || len(printed.Instances) != 1 || printed.Instances[0].NodeFault == nil {
		t.Errorf("stdout %q: %v", stdout, err)
	}
	if _, stderr, code := runDovetail(t, "local", "fault", "node", in.ID, "--clear", "--dir", dir); code != 0 {
		t.Fatalf("fault node --clear: exit %d: %s", code, stderr)
	}
	if got, _ := e.Instance(in.ID); got.NodeFault != nil {
		t.Errorf("--clear left %+v", got.NodeFault)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--condition", "Ready"}, cmdutil.ExitBadInput, "TYPE=STATUS"},
		{[]string{"--condition", "Ready=Maybe"}, cmdutil.ExitBadInput, "True, False or Unknown"},
		{[]string{"--clear", "--condition", "Ready=False"}, cmdutil.ExitBadInput, "--clear"},
		{[]string{"--condition", "Ready=False", "--age", "-1m"}, cmdutil.ExitBadInput, "--age"},
	} {
		args := append([]string{"local", "fault", "node", in.ID, "--dir", dir}, tc.args...)
		_, stderr, code := runDovetail(t, args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (%s)", tc.args, code, tc.code, stderr)
		}
		mustContain(t, stderr, tc.want)
	}
	if _, stderr, code := runDovetail(t, "local", "fault", "node", "i-0123456789abcdef0", "--condition", "Ready=False", "--dir", dir); code != cmdutil.ExitError {
		t.Errorf("unknown instance: exit %d, want %d (%s)", code, cmdutil.ExitError, stderr)
	}
}
