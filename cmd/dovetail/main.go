package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	// The controller image has no CA bundle (it is built from an empty
	// base): when the system has no roots, the Mozilla roots embedded here
	// verify AWS's TLS certificates.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/dovetail-sh/dovetail/internal/cli"
	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	root := cli.NewRootCmd(os.Stdout, os.Stderr)
	err := root.ExecuteContext(ctx)
	stop()
	if err != nil {
		cmdutil.PrintError(os.Stderr, err)
	}
	os.Exit(cmdutil.ExitCode(err))
}
