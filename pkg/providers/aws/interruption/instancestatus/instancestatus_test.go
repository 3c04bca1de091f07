package instancestatus_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/dovetail-sh/dovetail/internal/testutil/poll"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/internal/awstest"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/interruption/instancestatus"
)

// Events scheduled on the emulator's instances come back through
// aws-sdk-go-v2 as scheduled changes: retirements, stops and reboots, with
// their ids, codes and starts; maintenance, failed checks, completed
// events and other instances are left out.
func TestScheduledEventsFromTheEmulator(t *testing.T) {
	e, _ := awstest.Start(t, awsemu.Options{Seed: 3})
	ids := awstest.Launch(t, e, 6)
	ctx := context.Background()
	poll.Until(t, 30*time.Second, 10*time.Millisecond, "every instance running", func() (bool, error) {
		for _, id := range ids {
			if in, _ := e.Instance(id); in.State != awsemu.StateRunning {
				return false, nil
			}
		}
		return true, nil
	})
	want := map[string]string{
		ids[0]: awsemu.EventInstanceRetirement, ids[1]: awsemu.EventInstanceStop,
		ids[2]: awsemu.EventInstanceReboot, ids[3]: awsemu.EventSystemReboot,
	}
	starts := map[string]time.Time{}
	for id, code := range want {
		ev, err := e.ScheduleEvent(id, code, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		starts[ev.ID] = ev.NotBefore
	}
	if _, err := e.ScheduleEvent(ids[4], awsemu.EventSystemMaintenance, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := e.SetStatusCheck(ids[5], "system", "impaired"); err != nil {
		t.Fatal(err)
	}
	src := &instancestatus.Events{EC2: awstest.Clients(e).EC2}
	evs, err := src.ScheduledEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, ev := range evs {
		if ev.Kind != cloudprovider.InterruptionScheduledChange || len(ev.InstanceIDs) != 1 || !ev.Disruptive() {
			t.Errorf("event %+v: want one disruptive scheduled change per instance", ev)
			continue
		}
		got[ev.InstanceIDs[0]] = ev.State
		if nb, ok := starts[ev.ID]; !ok || !ev.NotBefore.Equal(nb) {
			t.Errorf("event %s of %s starts %v; the emulator scheduled %v (known id: %v)", ev.ID, ev.InstanceIDs[0], ev.NotBefore, nb, ok)
		}
	}
	if len(got) != len(want) || len(evs) != len(want) {
		t.Errorf("events for %v, want %v", got, want)
	}
	for id, code := range want {
		if got[id] != code {
			t.Errorf("instance %s: event %q, want %q", id, got[id], code)
		}
	}
	// Only running instances are asked about: a terminated one's events
	// are gone.
	if err := e.Interrupt(ids[1], awsemu.KindTerminated); err != nil {
		t.Fatal(err)
	}
	evs, err = src.ScheduledEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(evs, func(ev cloudprovider.InterruptionEvent) bool { return ev.InstanceIDs[0] == ids[1] }) {
		t.Errorf("a terminated instance's event is still reported: %+v", evs)
	}
}
