package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/sim"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// runCmd plays one scenario against one step and prints the referee's report.
func runCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", "lab run -step 04 -scenario slow [-json] [-redis embedded]", stderr)
	stepName := fs.String("step", "", "the step: 01…09, a slug (04_atomic_ttl) or a name (atomic_ttl)")
	scName := fs.String("scenario", "", "the scenario: "+scenarioList())
	asJSON := fs.Bool("json", false, "print the report as JSON")
	backend := fs.String("redis", os.Getenv("LAB_REDIS"), "the Redis backend (default embedded; env LAB_REDIS)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *stepName == "" || *scName == "" {
		return usageError("run needs -step and -scenario (see -h)")
	}
	st, err := catalog.Find(*stepName)
	if err != nil {
		return usageError("%v", err)
	}
	sc, ok := steps.ParseScenario(*scName)
	if !ok {
		return usageError("unknown scenario %q (want one of %s)", *scName, scenarioList())
	}
	env, err := redisenv.Open(*backend)
	if err != nil {
		return usageError("%v", err)
	}
	defer env.Close()
	rep, err := sim.Run(context.Background(), sim.Config{Step: st, Env: env}, sc)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprint(stdout, rep.Text())
	if len(rep.Violations) > 0 {
		fmt.Fprintf(stdout, "\nlesson: %s\n", st.Lesson)
	}
	return nil
}

// cell is one entry of the matrix, as -json prints it.
type cell struct {
	Step       string       `json:"step"`
	Scenario   string       `json:"scenario"`
	Violations []steps.Kind `json:"violations"`
}

// matrixCmd plays every scenario against every step and prints the table.
func matrixCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("matrix", "lab matrix [-json] [-redis embedded]", stderr)
	asJSON := fs.Bool("json", false, "print a JSON array of {step, scenario, violations}")
	backend := fs.String("redis", os.Getenv("LAB_REDIS"), "the Redis backend (default embedded; env LAB_REDIS)")
	if err := parse(fs, args); err != nil {
		return err
	}
	var cells []cell
	for _, st := range catalog.Steps {
		for _, sc := range steps.Scenarios {
			env, err := redisenv.Open(*backend)
			if err != nil {
				return usageError("%v", err)
			}
			rep, err := sim.Run(context.Background(), sim.Config{Step: st, Env: env}, sc)
			env.Close()
			if err != nil {
				return fmt.Errorf("%s under %s: %w", st.Slug, sc, err)
			}
			cells = append(cells, cell{Step: st.Slug, Scenario: string(sc), Violations: rep.Violations})
		}
		if !*asJSON {
			fmt.Fprint(stderr, ".")
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(cells)
	}
	fmt.Fprintln(stderr)
	fmt.Fprint(stdout, renderMatrix(cells))
	return nil
}

// renderMatrix draws the table in Markdown, ✓ where no judged kind happened.
func renderMatrix(cells []cell) string {
	var b strings.Builder
	b.WriteString("| step |")
	for _, sc := range steps.Scenarios {
		b.WriteString(" " + string(sc) + " |")
	}
	b.WriteString("\n|---|")
	b.WriteString(strings.Repeat("---|", len(steps.Scenarios)))
	b.WriteString("\n")
	for i, c := range cells {
		if i%len(steps.Scenarios) == 0 {
			b.WriteString("| " + c.Step + " |")
		}
		v := "✓"
		if len(c.Violations) > 0 {
			s := make([]string, len(c.Violations))
			for j, k := range c.Violations {
				s[j] = string(k)
			}
			v = strings.Join(s, ", ")
		}
		b.WriteString(" " + v + " |")
		if i%len(steps.Scenarios) == len(steps.Scenarios)-1 {
			b.WriteString("\n")
		}
	}
	return b.String()
}

func scenarioList() string {
	s := make([]string, len(steps.Scenarios))
	for i, sc := range steps.Scenarios {
		s[i] = string(sc)
	}
	return strings.Join(s, ", ")
}
