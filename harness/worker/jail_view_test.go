package worker

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// An entry of a folder the view shadows that disappears between being
// listed and bound back (a test's temp folder in /tmp on a busy CI host) is
// left out of the view; before, the view stopped half made, the job's own
// folder stayed under a read-only parent, and the job exited with code 1
// before its first stage ("Read-only file system" on judge/log.txt).
func TestJailShadowSurvivesVanishingEntries(t *testing.T) {
	got, err := jailScript(t, "jail_vanishing.py")
	if err != nil || got != "shown 1 ['kept']" {
		t.Fatalf("shadowing a folder whose entry vanished: %v: %q, want \"shown 1 ['kept']\"", err, got)
	}
}

// A writable folder that is closed to others keeps the job's writes on
// the host (before: a tmpfs laid over it took them, and the build step's
// precompiled headers were made again for every evaluation).
func TestJailClosedWritableFolderKeepsWrites(t *testing.T) {
	if got, err := jailScript(t, "jail_closed_writable.py"); err != nil || got != "kept" {
		t.Fatalf("a write to a closed writable folder in the view: %v: %q, want \"kept\"", err, got)
	}
}

// jailScript runs testdata/name, which lays out a view with sandbox/jail.py (the
// worker's Python folder its argument), and returns its output, trimmed.
// It needs root for the mount namespace: the test is skipped without.
func jailScript(t *testing.T, name string) (string, error) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the view's mount namespace needs root")
	}
	pyDir, err := filepath.Abs("py")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(testPython(t), filepath.Join("testdata", name), pyDir).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
