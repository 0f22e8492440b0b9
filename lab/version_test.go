package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-lab/lockstep/lab/grading"
)

// TestGraderBeside: a downloaded lab plays in the grader beside it only when that grader is the
// one packed with it (the sha256 dist.sh stamped into the lab); missing, or another archive's, it
// is an error in one line that says what to do.
func TestGraderBeside(t *testing.T) {
	dir := t.TempDir()
	body := []byte("a grader's bytes")
	h := sha256.Sum256(body)
	sum := hex.EncodeToString(h[:])
	if _, err := graderBeside(dir, sum); err == nil || !strings.Contains(err.Error(), "there is no") || strings.Contains(err.Error(), "\n") {
		t.Errorf("no grader beside the lab: %v; want one line saying there is none", err)
	}
	bin := filepath.Join(dir, grading.Exe(graderName))
	if err := os.WriteFile(bin, body, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := graderBeside(dir, sum); err != nil || got != bin {
		t.Errorf("the grader packed with the lab: %q, %v; want %q", got, err, bin)
	}
	h = sha256.Sum256([]byte("another archive's grader"))
	if _, err := graderBeside(dir, hex.EncodeToString(h[:])); err == nil || !strings.Contains(err.Error(), "is not the grader packed with this lab") || strings.Contains(err.Error(), "\n") {
		t.Errorf("another archive's grader: %v; want one line saying it is not this lab's", err)
	}
}

// TestDownloadedLab: a lab stamped as dist.sh stamps it, alone with its grader in an empty folder
// outside the module, with no go command to find (PATH empty, GOROOT nowhere): lab version names
// its version and its grader; run and explore of a step play in the packed grader, in virtual
// time (04 × slow overlaps; a program breaks 04); grade says in one line that it needs Go; and a
// grader that is not the one packed with it, or none, is refused in one line. (CI unpacks a real
// archive of scripts/dist.sh the same way.)
func TestDownloadedLab(t *testing.T) {
	t.Parallel() // it links a lab and runs it
	dir := t.TempDir()
	grader, err := buildTest(context.Background(), "..", "internal/matrix", "the grader", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(grader)
	if err != nil {
		t.Fatal(err)
	}
	packed := filepath.Join(dir, grading.Exe(graderName))
	if err := os.WriteFile(packed, body, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	goTool, err := grading.GoTool()
	if err != nil {
		t.Fatal(err)
	}
	lab := filepath.Join(dir, grading.Exe("lab"))
	ldflags := "-X main.version=v0.0.0-test -X main.commit=0123456789abcdef -X main.graderSum=" + hex.EncodeToString(sum[:])
	if out, err := exec.Command(goTool, "build", "-ldflags="+ldflags, "-o", lab, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build of the stamped lab: %v\n%s", err, out)
	}
	env := []string{"PATH=", "GOROOT=" + filepath.Join(dir, "no-go"), "HOME=" + dir, "TMPDIR=" + t.TempDir()}
	labRun := func(args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(lab, args...)
		cmd.Dir, cmd.Env = dir, env
		var out, errw bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errw
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("lab %v: %v", args, err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errw.String()
	}
	oneLine := func(what, errs, want string) {
		t.Helper()
		if lines := strings.Split(strings.TrimSpace(errs), "\n"); len(lines) != 1 || !strings.Contains(errs, want) {
			t.Errorf("%s: want one line with %q, got:\n%s", what, want, errs)
		}
	}

	code, out, errs := labRun("version")
	if code != 0 || !strings.Contains(out, "lab v0.0.0-test, commit 0123456789ab, go") || !strings.Contains(out, "grader: "+packed+", the one packed with this lab") {
		t.Errorf("lab version: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = labRun("run", "-step", "04", "-scenario", "slow")
	if code != 0 || !strings.Contains(out, "verdict: ✗ overlap, oversold, foreign-release") || strings.Contains(errs, "building") {
		t.Errorf("lab run -step 04 -scenario slow: exit %d, want 0, the packed grader's overlap and no build\n%s%s", code, out, errs)
	}
	code, out, errs = labRun("explore", "-programs", "20", "04")
	if code != 1 || !strings.Contains(out, "04_atomic_ttl broke (") {
		t.Errorf("lab explore 04: exit %d, want 1 and a break\n%s%s", code, out, errs)
	}
	if err := os.MkdirAll(filepath.Join(dir, "steps", "mine"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, errs = labRun("grade", filepath.Join("steps", "mine"))
	if code != 1 {
		t.Errorf("lab grade without Go: exit %d, want 1", code)
	}
	oneLine("lab grade without Go", errs, "grade compiles your lock with the Go toolchain, and go is not on PATH")

	if err := os.WriteFile(packed, append(body, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errs = labRun("run", "-step", "04", "-scenario", "slow")
	if code != 1 || out != "" {
		t.Errorf("another grader beside the lab: exit %d, want 1 and nothing played\n%s", code, out)
	}
	oneLine("another grader beside the lab", errs, "is not the grader packed with this lab (lab v0.0.0-test")
	if code, _, errs = labRun("version"); code != 1 {
		t.Errorf("lab version beside another grader: exit %d, want 1", code)
	}
	oneLine("lab version beside another grader", errs, "is not the grader packed with this lab")
	if err := os.Remove(packed); err != nil {
		t.Fatal(err)
	}
	code, _, errs = labRun("matrix", "-steps", "04")
	if code != 1 {
		t.Errorf("no grader beside the lab: exit %d, want 1", code)
	}
	oneLine("no grader beside the lab", errs, "unpack the whole archive")
}
