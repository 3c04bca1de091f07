package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
	"github.com/dovetail-sh/dovetail/internal/cli/controller"
	"github.com/dovetail-sh/dovetail/internal/cli/cost"
	"github.com/dovetail-sh/dovetail/internal/cli/explain"
	"github.com/dovetail-sh/dovetail/internal/cli/local"
	"github.com/dovetail-sh/dovetail/internal/cli/simulate"
	"github.com/dovetail-sh/dovetail/internal/cli/snapshot"
	"github.com/dovetail-sh/dovetail/internal/version"
)

// NewRootCmd builds the dovetail command tree. Every subcommand is registered
// here, so the whole CLI is visible in one place.
func NewRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "dovetail",
		Short:         "dovetail: a Kubernetes node autoscaler that speaks Karpenter's v1 API",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return cmdutil.BadInput(fmt.Errorf("%w\nSee '%s --help'", err, cmd.CommandPath()))
	})
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newVersionCmd())
	for _, add := range subcommands {
		root.AddCommand(add())
	}
	return root
}

// subcommands lists the constructors of the top-level subcommands, in the
// order help shows them.
var subcommands = []func() *cobra.Command{
	local.NewCmd,
	controller.NewCmd,
	func() *cobra.Command { return simulate.NewCmd(nil) },
	func() *cobra.Command { return snapshot.NewCmd(nil) },
	func() *cobra.Command { return explain.NewCmd(nil) },
	func() *cobra.Command { return cost.NewCmd(nil) },
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the dovetail version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), version.Version)
			return err
		},
	}
}
