package cmdop

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

// maxWatchEntries bounds the after-the-fact scan of one proposal, so a
// huge working tree costs a bounded walk, not minutes.
const maxWatchEntries = 50000

// claudeScope is the permission-rule path that confines Claude Code's
// file edits (Edit rules cover Write too) to dir: "//" marks an absolute
// path in its gitignore-style patterns.
func claudeScope(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	return "//" + strings.TrimPrefix(filepath.ToSlash(abs), "/") + "/**"
}

// watchRoots are the folders a preset's proposal must leave alone: the
// configured ones, else this process's working directory (the user's
// project) and the reference's folder.
func (o *Op) watchRoots(reference string) []string {
	if len(o.cfg.Watch) > 0 {
		return o.cfg.Watch
	}
	var roots []string
	if wd, err := os.Getwd(); err == nil && wd != "/" {
		roots = append(roots, wd)
	}
	if reference != "" {
		roots = append(roots, filepath.Dir(reference))
	}
	return roots
}

// coarseClockTick bounds how far a file's modification time may lag the
// clock it is compared with.
const coarseClockTick = 20 * time.Millisecond

// writesOutside lists files under roots modified at or after since that
// are not in dir: what an agent wrote outside its proposal's folder. The
// proposal folders (WorkRoot: proposals running in parallel), kevolve's
// cache and hidden folders (.git, editor and agent state) are skipped.
func (o *Op) writesOutside(roots []string, dir string, since time.Time) []string {
	skip := []string{dir, o.cfg.WorkRoot, toolchain.CacheDir()}
	skipped := func(p string) bool {
		for _, s := range skip {
			if s != "" && (p == s || strings.HasPrefix(p, s+string(filepath.Separator))) {
				return true
			}
		}
		return false
	}
	// File times come from the kernel's coarse clock, up to a tick (1-10
	// ms) behind the time since was read: a file the agent wrote at once
	// can carry an earlier time.
	since = since.Add(-coarseClockTick)
	seen := map[string]bool{}
	n := 0
	for _, root := range roots {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			n++
			if err != nil || n > maxWatchEntries {
				return fs.SkipDir
			}
			if d.IsDir() {
				if skipped(p) || (p != root && strings.HasPrefix(d.Name(), ".")) {
					return fs.SkipDir
				}
				return nil
			}
			if info, err := d.Info(); err == nil && !info.ModTime().Before(since) {
				seen[p] = true
			}
			return nil
		})
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// progress reports, every ProgressEvery until the returned stop is
// called, that the agent is still working: how long, and whether it has
// changed kernel.py yet. An agent works for minutes in silence otherwise.
func (o *Op) progress(runID string, parent int64, dir string, t0 time.Time) (stop func()) {
	every := o.cfg.ProgressEvery
	if every <= 0 {
		every = 30 * time.Second
	}
	say := o.cfg.Progress
	if say == nil {
		say = func(line string) { slog.Info(line) }
	}
	kernel := filepath.Join(dir, "kernel.py")
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				state := "kernel.py not changed yet"
				if st, err := os.Stat(kernel); err == nil && st.ModTime().After(t0) {
					state = "kernel.py changed " + time.Since(st.ModTime()).Round(time.Second).String() + " ago"
				}
				say(fmt.Sprintf("operator %s (run %s) working on a child of node %d for %s: %s; deadline %s",
					o.name, runID, parent, time.Since(t0).Round(time.Second), state, o.cfg.Deadline))
			}
		}
	}()
	return func() { close(done); <-finished }
}
