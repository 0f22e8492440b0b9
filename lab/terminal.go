package main

import (
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/lockstep-lab/lockstep/internal/explore"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/lab/tui"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// tuiCmd opens the terminal lab (lab/tui) with its flags checked first: bad input and a backend
// that cannot start fail before the screen changes.
func tuiCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("lab", "lab [-redis embedded] [-speed 10] [-buyers 5] [-stock 100] [-step 05] [-drive] [-dir steps/mine [-nodes 1]] [-program FILE]\n\n"+
		"Opens the terminal lab: pick a step, break it, read the lesson, see the fix. Press ? in the lab for\n"+
		"every key; -dir adds your own lock's folder as the picker's last line; -program FILE opens it on the\n"+
		"program lab explore -save FILE found, its run played at the lab's pace. Headless: lab run -step 04\n"+
		"-scenario slow, lab matrix, lab list steps, lab grade steps/mine, lab explore 04, lab judge runs.json,\n"+
		"lab class alice.json bob.json, lab version (each takes -h).", stderr)
	backend := fs.String("redis", os.Getenv("LAB_REDIS"), "the Redis backend (default embedded; env LAB_REDIS)")
	slow := fs.Float64("speed", 10, "slow time down this many times, so a person can follow a TTL (1 = the tests' pace, TTL 200 ms; 10 = TTL 2 s);\n"+
		"from 1 to 100; in the lab [ and ] step through 1, 2, 5, 10, 20, from any -speed to the nearest level that way")
	buyers := fs.Int("buyers", 5, "buyers placing orders in the live arena (1…50)")
	stock := fs.Int("stock", 100, "units on the shelf at the start and after each reset (1…1000)")
	drive := fs.Bool("drive", false, "open in drive mode (m in the arena): time stands still and you send each buyer's next Redis command;\n"+
		"it plays in the grader, in virtual time (built the first time, as lab run builds it)")
	stepName := fs.String("step", "", "open the arena on this step: a number (5 or 05), a slug or a name")
	progFile := fs.String("program", "", "play the program lab explore -save wrote to this file: its recorded run at the lab's pace, the program in words,\n"+
		"the referee's verdict (lab judge's); , . home end rewind it once played (a program of your lock's folder: with -dir)")
	if err := parse(fs, args); err != nil {
		return err
	}
	switch {
	case *slow < 1 || *slow > 100:
		return usageError("-speed %g: want a slow-down factor from 1 to 100", *slow)
	case *buyers < 1 || *buyers > tui.MaxBuyers:
		return usageError("-buyers %d: want 1…%d", *buyers, tui.MaxBuyers)
	case *stock < 1 || *stock > 1000:
		return usageError("-stock %d: want 1…1000", *stock)
	}
	if *stepName != "" {
		if _, err := catalog.Find(*stepName); err != nil {
			return usageError("-step: %v", err)
		}
	}
	var prog *tui.Program
	if *progFile != "" {
		var err error
		if prog, err = loadProgram(*progFile, catalog.Steps); err != nil {
			return err
		}
	}
	// Fail before the screen changes if the backend cannot start.
	env, err := redisenv.Open(*backend, redisenv.Options{})
	if err != nil {
		return usageError("%v", err)
	}
	env.Close()
	return tui.Run(tui.Options{Backend: *backend, Slow: *slow, Buyers: *buyers, Stock: *stock, Program: prog,
		Learner: learner, Shared: learnerShared, Driver: tuiDriver, Drive: *drive, Step: *stepName}, stdout)
}

// loadProgram reads the program in file, a run of one of all (the catalog, with the learner's
// lock when the lab was built with -dir). Anything else is bad input, in one line: a missing file,
// a file that is not explore's, a program of a lock this lab does not have.
func loadProgram(file string, all []*steps.Step) (*tui.Program, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, usageError("-program: %v", err)
	}
	var probe struct {
		Lockstep string          `json:"lockstep"`
		Program  json.RawMessage `json:"program"`
		Drive    json.RawMessage `json:"drive"`
	}
	if json.Unmarshal(b, &probe) != nil || probe.Lockstep != "runs" || probe.Program == nil && probe.Drive == nil {
		return nil, usageError("-program %s: not a program lab explore -save wrote, nor a session lab drive -save wrote (lab judge reads other runs)", file)
	}
	var s struct {
		savedFound
		Drive *driven `json:"drive"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, usageError("-program %s: %v", file, err)
	}
	if len(s.Runs) != 1 || s.Runs[0].History == nil {
		return nil, usageError("-program %s: a program file holds one run with its history, this one %s", file, course.Count(len(s.Runs), "run", "runs"))
	}
	r := s.Runs[0]
	i := slices.IndexFunc(all, func(st *steps.Step) bool { return st.Slug == r.Step })
	switch {
	case i >= 0:
	case learner != nil:
		return nil, usageError("-program %s is a program of %s, and this lab has %s: lab -dir %s -program %s", file, r.Step, learner.Slug, r.Step, file)
	case strings.Contains(r.Step, "/"):
		return nil, usageError("-program %s is a program of your lock in %s: lab -dir %s -program %s opens it", file, r.Step, r.Step, file)
	default:
		return nil, usageError("-program %s is a program of %q, which is no step of this lab", file, r.Step)
	}
	story := s.Program.Lines(explore.Struck(r.History))
	if s.Drive != nil {
		story = s.Drive.story()
	}
	return &tui.Program{File: file, Step: all[i], Story: story,
		History: r.History, Others: r.Others, Violations: r.Violations, Unjudged: r.Unjudged}, nil
}
