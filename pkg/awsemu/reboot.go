package awsemu

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// NodeFault is an unhealthy node condition of an instance (SetNodeFault):
// the local stack's node agent (package kubenode) writes it into the
// instance's Node, as a node monitoring agent would, until it is cleared
// (SetNodeFault with nil, ClearFaults) or, with ClearsOnReboot, until the
// instance's next reboot ends.
type NodeFault struct {
	// Type, Status and Reason are the node condition's, e.g.
	// AcceleratedHardwareReady, False, NvidiaXID63Error.
	Type   string `json:"type"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Since is the condition's lastTransitionTime.
	Since time.Time `json:"since"`
	// ClearsOnReboot: a reboot clears the fault (a transient fault);
	// otherwise it persists across reboots.
	ClearsOnReboot bool `json:"clearsOnReboot,omitempty"`
}

// BootID is the boot id the node of an instance reports: the instance id
// until its first reboot, then a new one per reboot.
func BootID(in Instance) string {
	if in.Reboots == 0 {
		return in.ID
	}
	return in.ID + "-boot-" + strconv.Itoa(in.Reboots)
}

// SetNodeFault sets (nil: clears) the node condition an instance's node
// reports (target: an instance id, node name or provider id). The fault
// is published to Subscribe's readers as an event of the instance.
func (e *Emulator) SetNodeFault(target string, f *NodeFault) error {
	if f != nil && (f.Type == "" || f.Status == "") {
		return errors.New("awsemu: a node fault needs a condition type and a status")
	}
	e.advance()
	e.mu.Lock()
	defer e.mu.Unlock()
	rec := e.findInstance(target)
	if rec == nil {
		return fmt.Errorf("%w: %q", ErrUnknownTarget, target)
	}
	if rec.State == StateShuttingDown || rec.State == StateTerminated {
		return fmt.Errorf("%w: %s is %s", ErrInstanceGone, rec.ID, rec.State)
	}
	if f != nil {
		c := *f
		if c.Since.IsZero() {
			c.Since = e.clock.Now().UTC().Truncate(time.Second)
		}
		f = &c
	}
	rec.NodeFault = f
	e.publish(InstanceEvent{Previous: rec.State, Instance: rec.clone()})
	return nil
}

// rebootInstances is EC2 RebootInstances: every id must be well formed and
// exist (InvalidInstanceID.Malformed, InvalidInstanceID.NotFound, checked
// before anything happens); terminated and shutting-down instances are
// ignored, as EC2 documents. A running instance reboots for the boot
// delay: it stays running, its instance status check reads
// "initializing", and when the reboot ends its boot id changes (a fault
// that clears on reboot is gone). A pending, stopping or stopped instance
// is answered IncorrectInstanceState (EC2 documents no answer for those:
// an assumption).
func (e *Emulator) rebootInstances(req *request) (any, *apiError) {
	ids := req.params.Strings("InstanceId")
	if len(ids) == 0 {
		return nil, errMissingParameter("InstanceId")
	}
	if aerr := e.knownInstances(ids); aerr != nil {
		return nil, aerr
	}
	for _, id := range ids {
		switch in := e.acct.instances[id]; in.State {
		case StateRunning, StateShuttingDown, StateTerminated:
		default:
			return nil, newAPIError("IncorrectInstanceState", 400, "The instance '%s' is not in a state from which it can be rebooted.", id)
		}
	}
	now := e.clock.Now()
	for _, id := range ids {
		in := e.acct.instances[id]
		if in.State != StateRunning || in.RebootingUntil.After(now) {
			continue
		}
		in.RebootingUntil = now.Add(e.scaled(e.opts.BootDelay))
		e.log.V(1).Info("instance rebooting", "instance", in.ID)
		e.at(in.RebootingUntil, in.ID, timerRebooted)
	}
	return returnXML{Return: true}, nil
}

// finishReboot ends an instance's reboot: a new boot, a fault that clears
// on reboot gone. Callers hold mu.
func (e *Emulator) finishReboot(in *instanceRec, now time.Time) {
	if in.RebootingUntil.IsZero() || in.RebootingUntil.After(now) {
		return
	}
	in.RebootingUntil = time.Time{}
	if in.State != StateRunning {
		return
	}
	in.Reboots++
	if in.NodeFault != nil && in.NodeFault.ClearsOnReboot {
		in.NodeFault = nil
	}
	e.log.V(1).Info("instance rebooted", "instance", in.ID, "reboots", in.Reboots)
	e.publish(InstanceEvent{Previous: in.State, Instance: in.clone()})
}
