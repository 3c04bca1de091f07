package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// config is the command line.
type config struct {
	binary      string
	repo        string
	dir         string
	keep        bool
	timeout     time.Duration
	kills       int
	seed        uint64
	statusEvery time.Duration
	interrupts  int
	report      string
	pdb         string
	pdbValue    intstr.IntOrString
}

// Exit codes.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitInterrupted = 130
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.StringVar(&cfg.binary, "binary", "bin/dovetail", "the dovetail executable the controller runs from (`make build`)")
	fs.StringVar(&cfg.repo, "repo", ".", "the repository root; its examples/ are applied and planned")
	fs.StringVar(&cfg.dir, "dir", "", "the stack's directory; a new temporary directory when empty")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the stack's directory (logs) after the run")
	fs.DurationVar(&cfg.timeout, "timeout", 24*time.Minute, "bound on the whole cycle (stack start included)")
	fs.IntVar(&cfg.kills, "kills", 50, "SIGKILLs of the controller, spread over the phases")
	fs.Uint64Var(&cfg.seed, "seed", 13, "seed of the kill moments, the interrupted instances and the emulator")
	fs.DurationVar(&cfg.statusEvery, "status-every", 20*time.Second, "how often a status line is printed")
	fs.IntVar(&cfg.interrupts, "interruptions", 6, "spot instances interrupted (in two waves)")
	fs.StringVar(&cfg.report, "report", "", "also write the figures as JSON to this file")
	fs.StringVar(&cfg.pdb, "pdb-max-unavailable", defaultPDBMaxUnavailable, "maxUnavailable of every app's PodDisruptionBudget (a count or a percentage)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if err := cfg.validate(); err != nil {
		fmt.Fprintf(stderr, "soak: %v\n", err)
		return exitUsage
	}

	sigCtx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	go func() {
		<-sigCtx.Done()
		// A second Ctrl-C ends the process at once (the stack's processes
		// may then be left running).
		stopSignals()
	}()
	ctx, cancel := context.WithTimeout(sigCtx, cfg.timeout)
	defer cancel()

	s := &soak{cfg: cfg, out: stdout, begin: time.Now()}
	rep, err := s.run(ctx)
	if sigCtx.Err() != nil {
		fmt.Fprintln(stdout, "soak: interrupted; the stack was stopped")
		if rep != nil {
			rep.print(stdout)
		}
		return exitInterrupted
	}
	if rep != nil {
		rep.print(stdout)
		if cfg.report != "" {
			if werr := rep.writeJSON(cfg.report); werr != nil {
				fmt.Fprintf(stderr, "soak: %v\n", werr)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "soak: %v\n", err)
		return exitFailed
	}
	if len(rep.Failures) > 0 {
		fmt.Fprintf(stdout, "soak: FAILED (%d checks)\n", len(rep.Failures))
		return exitFailed
	}
	fmt.Fprintln(stdout, "soak: PASSED")
	return exitOK
}

func (c *config) validate() error {
	if c.kills < 0 {
		return fmt.Errorf("-kills %d: must be 0 or more", c.kills)
	}
	if c.timeout <= 0 {
		return fmt.Errorf("-timeout %s: must be positive", c.timeout)
	}
	if c.statusEvery <= 0 {
		return fmt.Errorf("-status-every %s: must be positive", c.statusEvery)
	}
	if c.interrupts < 0 {
		return fmt.Errorf("-interruptions %d: must be 0 or more", c.interrupts)
	}
	v, err := parseMaxUnavailable(c.pdb)
	if err != nil {
		return fmt.Errorf("-pdb-max-unavailable %w", err)
	}
	c.pdbValue = v
	fi, err := os.Stat(c.binary)
	if err != nil {
		return fmt.Errorf("-binary %s: %w (run `make build` first)", c.binary, err)
	}
	if fi.IsDir() {
		return fmt.Errorf("-binary %s: is a directory", c.binary)
	}
	if c.binary, err = filepath.Abs(c.binary); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(c.repo, "examples")); err != nil {
		return fmt.Errorf("-repo %s: %w", c.repo, errors.Unwrap(err))
	}
	return nil
}
