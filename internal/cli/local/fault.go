package local

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/awsemu/localaws"
	stack "github.com/dovetail-sh/dovetail/pkg/local"
)

// FaultOptions holds the inputs of `local fault ice|throttle|clear`.
type FaultOptions struct {
	Dir  string
	Kind string // ice, throttle, capacity, clear

	InstanceType, Zone, CapacityType string            // ice
	Fraction                         float64           // throttle
	Seed                             int64             // throttle
	Spare                            int               // capacity (with the ice fields)
	Action                           string            // deny
	Target                           string            // event, status-check: instance id, node name or provider id
	Code                             string            // event
	In                               time.Duration     // event
	Check, Status                    string            // status-check
	NodeFault                        *awsemu.NodeFault // node (nil: clear it)

	Stdout io.Writer
}

// NewCmdFault builds `local fault` and its subcommands. runF replaces
// faultRun in tests; nil runs it.
func NewCmdFault(runF func(context.Context, *FaultOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fault",
		Short: "Inject faults into the running local AWS emulator",
		Long: `Inject faults into the AWS emulator of a running ` + "`dovetail local up`" + `:
insufficient capacity for launches, throttling of API calls, the spare
capacity of offerings (what price-capacity-optimized spot launches choose
by), scheduled events and failed status checks of instances (what EC2
DescribeInstanceStatus reports), or clear them.
The emulator's address is read from DIR/aws.env. The faults in force are
printed as JSON on stdout.

Exit codes: 0 done, 1 the emulator could not be reached, 2 bad flags.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	run := func(cmd *cobra.Command, opts *FaultOptions) error {
		opts.Stdout = cmd.OutOrStdout()
		if runF != nil {
			return runF(cmd.Context(), opts)
		}
		return faultRun(cmd.Context(), opts)
	}

	ice := &FaultOptions{Kind: "ice"}
	iceCmd := &cobra.Command{
		Use:   "ice --instance-type T [--zone Z] [--capacity-type spot|on-demand]",
		Short: "Make launches of a type fail with InsufficientInstanceCapacity",
		Example: `  dovetail local fault ice --instance-type m5.large
  dovetail local fault ice --instance-type m7g.large --zone us-east-1a --capacity-type spot`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ice.InstanceType == "" {
				return cmdutil.BadInputf("--instance-type is required\nSee '%s --help'", cmd.CommandPath())
			}
			if ice.CapacityType != "" && ice.CapacityType != "spot" && ice.CapacityType != "on-demand" {
				return cmdutil.BadInputf("--capacity-type %q: valid values are on-demand, spot", ice.CapacityType)
			}
			return run(cmd, ice)
		},
	}
	iceCmd.Flags().StringVar(&ice.InstanceType, "instance-type", "", "instance type to make unavailable (required)")
	iceCmd.Flags().StringVar(&ice.Zone, "zone", "", "only in this zone (default: every zone)")
	iceCmd.Flags().StringVar(&ice.CapacityType, "capacity-type", "", "only for this capacity type: spot or on-demand (default: both)")

	thr := &FaultOptions{Kind: "throttle"}
	thrCmd := &cobra.Command{
		Use:     "throttle --fraction F [--seed S]",
		Short:   "Throttle a fraction of all AWS API calls",
		Example: `  dovetail local fault throttle --fraction 0.2 --seed 7`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("fraction") {
				return cmdutil.BadInputf("--fraction is required\nSee '%s --help'", cmd.CommandPath())
			}
			if !(thr.Fraction >= 0 && thr.Fraction <= 1) { // NaN too
				return cmdutil.BadInputf("--fraction %v: must be between 0 and 1", thr.Fraction)
			}
			return run(cmd, thr)
		},
	}
	thrCmd.Flags().Float64Var(&thr.Fraction, "fraction", 0, "share of calls to throttle, 0..1 (required; 0 turns throttling off)")
	thrCmd.Flags().Int64Var(&thr.Seed, "seed", 0, "seed of the choice of throttled calls")

	capa := &FaultOptions{Kind: "capacity"}
	capCmd := &cobra.Command{
		Use:   "capacity --spare N [--instance-type T] [--zone Z] [--capacity-type spot|on-demand]",
		Short: "Set the spare capacity (0-100) of matching offerings",
		Long: `Set the spare-capacity score (0-100) of the offerings that match; unset
offerings keep their seeded score. CreateFleet's price-capacity-optimized
strategy picks, among the offerings priced within 10% of the cheapest, the
one with the most spare capacity; capacity-optimized picks the most spare
capacity. Later rules win; ` + "`fault clear`" + ` goes back to the seeded model.`,
		Example: `  dovetail local fault capacity --instance-type m5.large --capacity-type spot --spare 0
  dovetail local fault capacity --zone us-east-1b --spare 100`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("spare") {
				return cmdutil.BadInputf("--spare is required\nSee '%s --help'", cmd.CommandPath())
			}
			if capa.Spare < 0 || capa.Spare > awsemu.MaxSpareCapacity {
				return cmdutil.BadInputf("--spare %d: must be between 0 and %d", capa.Spare, awsemu.MaxSpareCapacity)
			}
			if capa.CapacityType != "" && capa.CapacityType != "spot" && capa.CapacityType != "on-demand" {
				return cmdutil.BadInputf("--capacity-type %q: valid values are on-demand, spot", capa.CapacityType)
			}
			return run(cmd, capa)
		},
	}
	capCmd.Flags().IntVar(&capa.Spare, "spare", 0, "spare-capacity score, 0..100 (required)")
	capCmd.Flags().StringVar(&capa.InstanceType, "instance-type", "", "only this instance type (default: every type)")
	capCmd.Flags().StringVar(&capa.Zone, "zone", "", "only in this zone (default: every zone)")
	capCmd.Flags().StringVar(&capa.CapacityType, "capacity-type", "", "only for this capacity type: spot or on-demand (default: both)")

	deny := &FaultOptions{Kind: "deny"}
	denyCmd := &cobra.Command{
		Use:   "deny --action SERVICE:OPERATION",
		Short: "Make an AWS action fail as not authorized",
		Long: `Answer every call of an action as not authorized (UnauthorizedOperation for
EC2, AccessDenied or AccessDeniedException elsewhere) until ` + "`fault clear`" + `.
Denying ec2:DescribeSpotPriceHistory shows what the controller does without
live spot prices.`,
		Example: `  dovetail local fault deny --action ec2:DescribeSpotPriceHistory`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !strings.Contains(deny.Action, ":") {
				return cmdutil.BadInputf("--action %q: want SERVICE:OPERATION, e.g. ec2:DescribeSpotPriceHistory", deny.Action)
			}
			return run(cmd, deny)
		},
	}
	denyCmd.Flags().StringVar(&deny.Action, "action", "", "the action to deny, as IAM names it (required)")

	evt := &FaultOptions{Kind: "event"}
	evtCmd := &cobra.Command{
		Use:   "event INSTANCE_OR_NODE --code " + strings.Join(awsemu.EventCodes(), "|") + " [--in DURATION]",
		Short: "Schedule an EC2 event (retirement, stop, reboot, maintenance) for an instance",
		Long: `Schedule an event for an instance, as EC2 does before retiring, stopping or
rebooting it: DescribeInstanceStatus reports it (with its code, description
and start) until it starts, --in from now (default 336h, two weeks); then an
instance-stop or instance-retirement stops the instance and the event reads
"[Completed]". INSTANCE_OR_NODE is an instance id (i-...), a node name or a
provider id (aws:///ZONE/ID).`,
		Example: `  dovetail local fault event ip-10-0-1-23.ec2.internal --code instance-retirement
  dovetail local fault event i-0123456789abcdef0 --code system-reboot --in 1h`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdutil.BadInputf("%s takes one INSTANCE_OR_NODE, got %d arguments\nSee '%s --help'", cmd.CommandPath(), len(args), cmd.CommandPath())
			}
			evt.Target = args[0]
			if !slices.Contains(awsemu.EventCodes(), evt.Code) {
				return cmdutil.BadInputf("--code %q: valid codes are %s", evt.Code, strings.Join(awsemu.EventCodes(), ", "))
			}
			if evt.In < 0 {
				return cmdutil.BadInputf("--in %v: must not be negative", evt.In)
			}
			return run(cmd, evt)
		},
	}
	evtCmd.Flags().StringVar(&evt.Code, "code", "", "event code: "+strings.Join(awsemu.EventCodes(), ", ")+" (required)")
	evtCmd.Flags().DurationVar(&evt.In, "in", 0, "how long from now the event starts (default 336h)")

	chk := &FaultOptions{Kind: "status-check"}
	chkCmd := &cobra.Command{
		Use:   "status-check INSTANCE_OR_NODE --check system|instance [--status impaired|ok]",
		Short: "Fail (or pass again) an instance's system or instance status check",
		Long: `Set the result of a running instance's status check as DescribeInstanceStatus
reports it: impaired (reachability failed) or ok (passed, the default
answer).`,
		Example: `  dovetail local fault status-check ip-10-0-1-23.ec2.internal --check system
  dovetail local fault status-check i-0123456789abcdef0 --check instance --status ok`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdutil.BadInputf("%s takes one INSTANCE_OR_NODE, got %d arguments\nSee '%s --help'", cmd.CommandPath(), len(args), cmd.CommandPath())
			}
			chk.Target = args[0]
			if chk.Check != "system" && chk.Check != "instance" {
				return cmdutil.BadInputf("--check %q: valid checks are instance, system", chk.Check)
			}
			if chk.Status != "impaired" && chk.Status != "ok" {
				return cmdutil.BadInputf("--status %q: valid statuses are impaired, ok", chk.Status)
			}
			return run(cmd, chk)
		},
	}
	chkCmd.Flags().StringVar(&chk.Check, "check", "", "the check: system or instance (required)")
	chkCmd.Flags().StringVar(&chk.Status, "status", "impaired", "impaired or ok")

	nf := &FaultOptions{Kind: "node"}
	var cond string
	var age time.Duration
	var clears, clearNode bool
	nfCmd := &cobra.Command{
		Use:   "node INSTANCE_OR_NODE (--condition TYPE=STATUS[/REASON] [--age D] [--clears-on-reboot] | --clear)",
		Short: "Make an instance's node report an unhealthy condition (node repair)",
		Long: `Make the node of an instance report a status condition, as a node
monitoring agent or the kubelet would (the condition node repair acts on):
the local stack's node agent writes it into the Node, with the label
kwok.x-k8s.io/stage=unhealthy so kwok leaves it, and keeps it there until
--clear (or ` + "`fault clear`" + `). --age backdates its lastTransitionTime (past a
repair policy's toleration, say). With --clears-on-reboot a reboot of the
instance (EC2 RebootInstances) clears it, a transient fault; without, it
persists across reboots. TYPE=STATUS[/REASON] is the format of the peer's
--repair-condition and --reboot-condition flags.`,
		Example: `  dovetail local fault node ip-10-0-1-23.ec2.internal --condition AcceleratedHardwareReady=False/NvidiaXID63Error --age 11m --clears-on-reboot
  dovetail local fault node ip-10-0-1-23.ec2.internal --condition Ready=False/KubeletNotReady --age 31m
  dovetail local fault node ip-10-0-1-23.ec2.internal --clear`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdutil.BadInputf("%s takes one INSTANCE_OR_NODE, got %d arguments\nSee '%s --help'", cmd.CommandPath(), len(args), cmd.CommandPath())
			}
			nf.Target = args[0]
			if clearNode {
				if cond != "" || clears || age != 0 {
					return cmdutil.BadInputf("--clear takes no --condition, --age or --clears-on-reboot")
				}
				nf.NodeFault = nil
				return run(cmd, nf)
			}
			f, err := ParseNodeCondition(cond)
			if err != nil {
				return cmdutil.BadInputf("--condition: %v", err)
			}
			if age < 0 {
				return cmdutil.BadInputf("--age %v: must not be negative", age)
			}
			if age > 0 {
				f.Since = time.Now().Add(-age).UTC().Truncate(time.Second)
			}
			f.ClearsOnReboot = clears
			nf.NodeFault = f
			return run(cmd, nf)
		},
	}
	nfCmd.Flags().StringVar(&cond, "condition", "", "the condition, TYPE=STATUS[/REASON] (e.g. Ready=False/KubeletNotReady)")
	nfCmd.Flags().DurationVar(&age, "age", 0, "how long ago the condition started (default now)")
	nfCmd.Flags().BoolVar(&clears, "clears-on-reboot", false, "a reboot of the instance clears the fault")
	nfCmd.Flags().BoolVar(&clearNode, "clear", false, "clear the node's fault")

	clr := &FaultOptions{Kind: "clear"}
	clrCmd := &cobra.Command{
		Use:   "clear",
		Short: "Remove every injected fault",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return run(cmd, clr) },
	}
	for _, c := range []*cobra.Command{iceCmd, thrCmd, capCmd, denyCmd, evtCmd, chkCmd, nfCmd, clrCmd} {
		opts := map[*cobra.Command]*FaultOptions{iceCmd: ice, thrCmd: thr, capCmd: capa, denyCmd: deny, evtCmd: evt, chkCmd: chk, nfCmd: nf, clrCmd: clr}[c]
		c.Flags().StringVar(&opts.Dir, "dir", stack.DefaultDir, "directory of the running local stack")
		cmd.AddCommand(c)
	}
	return cmd
}

func faultRun(ctx context.Context, opts *FaultOptions) error {
	admin, err := localaws.Admin(opts.Dir)
	if err != nil {
		return err
	}
	var f awsemu.Faults
	switch opts.Kind {
	case "ice":
		f, err = admin.InjectICE(ctx, awsemu.ICERule{InstanceType: opts.InstanceType, Zone: opts.Zone, CapacityType: opts.CapacityType})
	case "throttle":
		f, err = admin.SetThrottle(ctx, opts.Fraction, opts.Seed)
	case "capacity":
		f, err = admin.SetCapacity(ctx, awsemu.CapacityRule{InstanceType: opts.InstanceType, Zone: opts.Zone, CapacityType: opts.CapacityType, Spare: opts.Spare})
	case "deny":
		f, err = admin.DenyAction(ctx, opts.Action)
	case "event":
		f, err = admin.ScheduleEvent(ctx, opts.Target, opts.Code, opts.In)
	case "status-check":
		f, err = admin.SetStatusCheck(ctx, opts.Target, opts.Check, opts.Status)
	case "node":
		f, err = admin.SetNodeFault(ctx, opts.Target, opts.NodeFault)
	case "clear":
		f, err = admin.ClearFaults(ctx)
	default:
		return fmt.Errorf("unknown fault kind %q", opts.Kind)
	}
	if err != nil {
		return err
	}
	b, _ := json.MarshalIndent(f, "", "  ")
	fmt.Fprintln(opts.Stdout, string(b))
	return nil
}

// InterruptOptions holds the inputs of `local interrupt`.
type InterruptOptions struct {
	Dir    string
	Target string
	Kind   string
	Stdout io.Writer
}

// NewCmdInterrupt builds `local interrupt`. runF replaces interruptRun in
// tests; nil runs it.
func NewCmdInterrupt(runF func(context.Context, *InterruptOptions) error) *cobra.Command {
	opts := &InterruptOptions{}
	kinds := awsemu.InterruptionKinds()
	cmd := &cobra.Command{
		Use:   "interrupt INSTANCE_OR_NODE --kind " + strings.Join(kinds, "|"),
		Short: "Send an EC2 interruption for an instance of the local AWS emulator",
		Long: `Put the EventBridge message of an interruption on the local interruption
queue, as AWS would, and apply its effect: spot-interruption terminates the
instance two minutes (x --time-scale) later, stopping stops it, terminated
terminates it now; rebalance and scheduled-change only send the message.
INSTANCE_OR_NODE is an instance id (i-...), a node name (the private DNS
name) or a provider id (aws:///ZONE/ID).

Exit codes: 0 sent, 1 unknown instance or emulator unreachable, 2 bad flags.`,
		Example: `  dovetail local interrupt ip-10-0-1-23.ec2.internal --kind spot-interruption
  dovetail local interrupt i-0123456789abcdef0 --kind rebalance`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdutil.BadInputf("%s takes one INSTANCE_OR_NODE, got %d arguments\nSee '%s --help'", cmd.CommandPath(), len(args), cmd.CommandPath())
			}
			opts.Target = args[0]
			found := false
			for _, k := range kinds {
				found = found || k == opts.Kind
			}
			if !found {
				return cmdutil.BadInputf("--kind %q: valid kinds are %s", opts.Kind, strings.Join(kinds, ", "))
			}
			opts.Stdout = cmd.OutOrStdout()
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return interruptRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Kind, "kind", "", "interruption kind: "+strings.Join(kinds, ", ")+" (required)")
	cmd.Flags().StringVar(&opts.Dir, "dir", stack.DefaultDir, "directory of the running local stack")
	return cmd
}

func interruptRun(ctx context.Context, opts *InterruptOptions) error {
	admin, err := localaws.Admin(opts.Dir)
	if err != nil {
		return err
	}
	if err := admin.Interrupt(ctx, opts.Target, opts.Kind); err != nil {
		return err
	}
	fmt.Fprintf(opts.Stdout, "sent %s for %s\n", opts.Kind, opts.Target)
	return nil
}

// ParseNodeCondition parses TYPE=STATUS[/REASON], the format of the
// peer's --repair-condition and --reboot-condition flags.
func ParseNodeCondition(v string) (*awsemu.NodeFault, error) {
	t, rest, ok := strings.Cut(v, "=")
	st, reason, _ := strings.Cut(rest, "/")
	if !ok || t == "" || st == "" {
		return nil, fmt.Errorf("%q: want TYPE=STATUS[/REASON], e.g. Ready=False/KubeletNotReady", v)
	}
	switch st {
	case "True", "False", "Unknown":
	default:
		return nil, fmt.Errorf("%q: status %q: want True, False or Unknown", v, st)
	}
	return &awsemu.NodeFault{Type: t, Status: st, Reason: reason}, nil
}
