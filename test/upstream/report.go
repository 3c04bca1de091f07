package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// table is the run's results, written after every unit so an interrupted
// run keeps what it measured.
type table struct {
	Started time.Time
	Wall    time.Duration
	Results []result
}

// counts returns how many specs passed, failed and skipped, and how many
// ended otherwise than expected.
func (t *table) counts() (passed, failed, skipped, unexpected int) {
	for _, r := range t.Results {
		switch r.State {
		case statePassed:
			passed++
		case stateSkipped:
			skipped++
		default:
			failed++
		}
		if r.State != r.Expected {
			unexpected++
		}
	}
	return
}

// summary is the run's last line.
func (t *table) summary() string {
	p, f, s, u := t.counts()
	return fmt.Sprintf("%d passed, %d failed (%d skipped); %d differ from the expectations; wall %s", p, f, s, u, t.Wall.Round(time.Second))
}

// writeMarkdown writes the per-spec table.
func (t *table) writeMarkdown(w io.Writer) {
	fmt.Fprintf(w, "# Peer suites against dovetail (started %s)\n\n", t.Started.UTC().Format(time.RFC3339))
	fmt.Fprintln(w, "| # | suite | spec | state | expected | seconds | gates | first failure line | logs |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for i, r := range t.Results {
		state := r.State
		if r.Detail != "" {
			state += " (" + r.Detail + ")"
		}
		exp := r.Expected
		if r.State != r.Expected {
			exp = "**" + exp + "** (differs)"
		}
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %.0f | %s | %s | %s |\n", i+1, r.Suite, cell(r.Spec), state, exp, r.Seconds,
			cell(r.Gates), cell(r.Failure), cell(strings.Join(r.Logs, " ")))
	}
	fmt.Fprintf(w, "\n%s\n", t.summary())
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.ReplaceAll(s, "\n", " ")
}

// save writes results.md and results.json into dir.
func (t *table) save(dir string) error {
	f, err := os.Create(filepath.Join(dir, "results.md"))
	if err != nil {
		return err
	}
	t.writeMarkdown(f)
	if err := f.Close(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644)
}

// loadTable reads a results.json a previous run wrote.
func loadTable(path string) (*table, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t := &table{}
	if err := json.Unmarshal(b, t); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// withoutDone drops the specs t already has a row for.
func withoutDone(specs []spec, t *table) []spec {
	done := map[string]bool{}
	for _, r := range t.Results {
		done[r.Suite+"\x00"+r.Spec] = true
	}
	var out []spec
	for _, s := range specs {
		if !done[s.Suite+"\x00"+s.Text] {
			out = append(out, s)
		}
	}
	return out
}
