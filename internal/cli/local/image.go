package local

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/awsemu/localaws"
	stack "github.com/dovetail-sh/dovetail/pkg/local"
)

// PublishImageOptions holds the inputs of `local publish-image`.
type PublishImageOptions struct {
	Dir       string
	Alias     string
	Parameter string
	Stdout    io.Writer
}

// NewCmdPublishImage builds `local publish-image`. runF replaces
// publishImageRun in tests; nil runs it.
func NewCmdPublishImage(runF func(context.Context, *PublishImageOptions) error) *cobra.Command {
	opts := &PublishImageOptions{}
	cmd := &cobra.Command{
		Use:   "publish-image (--alias FAMILY@latest | --parameter SSM_PATH)",
		Short: "Release a newer AMI in the local AWS emulator (to show drift)",
		Long: `Make the AWS emulator of a running ` + "`dovetail local up`" + ` release a newer
image, as Amazon does with a new EKS optimized AMI: a new image is
registered (a copy of the current one with a new id, version and creation
date) and the SSM parameter moves to it. With --alias every architecture and
variant of the family moves (al2023, al2 or bottlerocket, @latest only);
with --parameter just that one SSM parameter. EC2NodeClasses that resolve
through the parameter pick up the new AMI when their status is next
refreshed, and their nodes become Drifted.

Prints one line per parameter moved: the parameter, the old and new image.

Exit codes: 0 published, 1 unknown alias family or parameter, or the emulator could
not be reached, 2 bad flags (a pinned alias such as al2023@v20251101 among them).`,
		Example: `  dovetail local publish-image --alias al2023@latest
  dovetail local publish-image --parameter /aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/recommended/image_id`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (opts.Alias == "") == (opts.Parameter == "") {
				return cmdutil.BadInputf("give exactly one of --alias and --parameter\nSee '%s --help'", cmd.CommandPath())
			}
			opts.Stdout = cmd.OutOrStdout()
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return publishImageRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Alias, "alias", "", "AMI alias whose images to renew: al2023@latest, al2@latest or bottlerocket@latest")
	cmd.Flags().StringVar(&opts.Parameter, "parameter", "", "SSM parameter path (holding an image id) to move to a new image")
	cmd.Flags().StringVar(&opts.Dir, "dir", stack.DefaultDir, "directory of the running local stack")
	return cmd
}

func publishImageRun(ctx context.Context, opts *PublishImageOptions) error {
	admin, err := localaws.Admin(opts.Dir)
	if err != nil {
		return err
	}
	res, err := admin.PublishImage(ctx, awsemu.PublishImageRequest{Alias: opts.Alias, Parameter: opts.Parameter})
	var se *awsemu.AdminStatusError
	if errors.As(err, &se) && se.Status == 400 {
		return cmdutil.BadInputf("%s", se.Message)
	}
	if err != nil {
		return err
	}
	for _, p := range res.Published {
		fmt.Fprintf(opts.Stdout, "%s: %s -> %s (%s)\n", p.Parameter, p.PreviousImageID, p.ImageID, p.Name)
	}
	return nil
}
