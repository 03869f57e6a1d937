package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"
)

// runReport summarizes again the samples of results a run already wrote (latest.json), with this
// harness's tables and goals, and writes them as "run" does: latest.json and latest.md in --out,
// the README's results section. It runs nothing: a harness whose goals changed since a run judges
// that run's measurements by them.
func runReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	var cfg config
	fs.StringVar(&cfg.out, "out", "bench/results", "directory for latest.json and latest.md")
	fs.StringVar(&cfg.readme, "readme", "bench/README.md", "README whose results section is replaced by the new table (empty: none)")
	fs.BoolVar(&cfg.reportOnly, "report-only", false, reportOnlyUsage)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: berth-bench report [flags] RESULTS.json")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("report: want one results file (latest.json of a run)")
	}
	res, err := readResults(fs.Arg(0))
	if err != nil {
		return err
	}
	hooks, _ := chartByName("hooks")
	run, _ := time.ParseDuration(hookRun)
	res.Summary = summarize(res.Samples, res.Cases, res.Tools, hooks.Hooks, run)
	if err := res.write(cfg); err != nil {
		return err
	}
	return judge(missedGoals(res.Summary.Goals), cfg.reportOnly)
}

// readResults reads the results a run wrote; a file without samples is refused.
func readResults(path string) (results, error) {
	var res results
	data, err := os.ReadFile(path)
	if err != nil {
		return res, err
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return res, fmt.Errorf("%s: %w", path, err)
	}
	if len(res.Samples) == 0 || len(res.Cases) == 0 || len(res.Tools) == 0 {
		return res, fmt.Errorf("%s: no samples, cases or tools: not the results of berth-bench run", path)
	}
	return res, nil
}
