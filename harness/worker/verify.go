package worker

// The unpacked judge is verified, not trusted: before a parent starts,
// before each job and after each one, its files are hashed and compared
// with the source's (the binary's embedded tree, or Config.Source, hashed
// in memory). A changed, missing or extra file (a forged .pyc
// included) is repaired by unpacking again into a fresh folder swapped in
// place, logged with the files named, and a parent that loaded the old
// files is restarted. Extra folders count (a package there shadows any);
// an extra data file (out.txt) does not: nothing imports it.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// asideSeq names the folders damaged copies are moved to, uniquely.
var asideSeq atomic.Int64

// maxReported bounds the files a repair warning names.
const maxReported = 20

// check compares the folder dir with the manifest; it returns what differs
// ("evaluate/main.py: modified"), empty when the folder is intact.
func check(dir string, m *manifest) []string {
	var bad []string
	seen := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if err != nil {
			if rel == "." {
				return err
			}
			bad = append(bad, rel+": "+err.Error())
			return nil
		}
		if rel == "." {
			if !d.IsDir() {
				bad = append(bad, dir+": not a folder")
			}
			return nil
		}
		if d.IsDir() {
			if !m.dirs[rel] {
				bad = append(bad, rel+"/: unexpected folder")
				return fs.SkipDir
			}
			return nil
		}
		if problem := checkFile(p, rel, d, m); problem != "" {
			bad = append(bad, problem)
		}
		seen[rel] = true
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return []string{dir + ": missing"}
	} else if err != nil {
		return []string{dir + ": " + err.Error()}
	}
	for rel := range m.files {
		if !seen[rel] {
			bad = append(bad, rel+": missing")
		}
	}
	for _, rel := range []string{completeMarker, manifestName} {
		if !seen[rel] {
			bad = append(bad, rel+": missing")
		}
	}
	sort.Strings(bad)
	return bad
}

// checkFile says what is wrong with one entry of the folder, "" if nothing.
func checkFile(path, rel string, d fs.DirEntry, m *manifest) string {
	want, ok := m.files[rel]
	switch {
	case rel == completeMarker:
		return ""
	case rel == manifestName:
		want, ok = sha256Hex(m.text), true
	case !ok && importable(rel):
		return rel + ": unexpected file"
	case !ok:
		return "" // a data file the job left in its working folder: Python imports nothing from it
	}
	if !d.Type().IsRegular() {
		return rel + ": not a regular file"
	}
	got, err := hashFile(path)
	if err != nil {
		return rel + ": " + err.Error()
	}
	if got != want {
		return rel + ": modified"
	}
	return ""
}

// importable says whether Python could import a file of this name from a
// folder on its path (a module, bytecode, an extension, a path file): an
// extra one of those would be loaded instead of, or besides, the judge's.
func importable(rel string) bool {
	for _, ext := range []string{".py", ".pyc", ".pyw", ".so", ".pth", ".pyd", ".zip", ".egg"} {
		if strings.HasSuffix(strings.ToLower(rel), ext) {
			return true
		}
	}
	return false
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// unpack makes <cache>/worker/<hash> hold exactly the embedded files (see
// unpackFrom).
func unpack(cache string) (dir string, repaired []string, err error) {
	m, err := embedded()
	if err != nil {
		return "", nil, err
	}
	return unpackFrom(cache, m)
}

// unpackFrom makes <cache>/worker/<hash> hold exactly the files of m's
// source. It returns the folder and, when it had to unpack over an
// existing one, what was wrong with it. An error means the folder could
// not be made right, and says why.
func unpackFrom(cache string, m *manifest) (dir string, repaired []string, err error) {
	dst := filepath.Join(cache, "worker", m.hash)
	bad := check(dst, m)
	if len(bad) == 0 {
		return dst, nil, nil
	}
	_, statErr := os.Lstat(dst)
	fresh := errors.Is(statErr, fs.ErrNotExist)
	if err := install(dst, m); err != nil {
		return dst, bad, fmt.Errorf("worker python at %s (%s): unpacking it again failed: %w", dst, summarize(bad), err)
	}
	if fresh {
		return dst, nil, nil
	}
	return dst, bad, nil
}

// install writes a fresh copy beside dst and swaps it in: a damaged dst is
// moved aside first (rename onto a non-empty folder fails), and a copy
// another process installed meanwhile is kept when it checks out.
func install(dst string, m *manifest) error {
	parent := filepath.Dir(dst)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("create worker cache dir: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, filepath.Base(dst)+".tmp-")
	if err != nil {
		return fmt.Errorf("create temp worker dir: %w", err)
	}
	defer removeTree(tmp)
	if err := writeTree(tmp, m); err != nil {
		return fmt.Errorf("unpack worker python: %w", err)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		if lastErr = os.Rename(tmp, dst); lastErr == nil {
			return nil
		}
		if len(check(dst, m)) == 0 {
			return nil // another process installed a good copy first
		}
		old := fmt.Sprintf("%s.old-%d-%d-%d", dst, os.Getpid(), time.Now().UnixNano(), asideSeq.Add(1))
		if err := os.Rename(dst, old); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("move the damaged %s aside: %w", dst, err)
		}
		defer removeTree(old)
	}
	return fmt.Errorf("install worker dir: %w", lastErr)
}

// summarize names up to maxReported of the differences, in one line.
func summarize(bad []string) string {
	if len(bad) > maxReported {
		return strings.Join(bad[:maxReported], "; ") + fmt.Sprintf("; and %d more", len(bad)-maxReported)
	}
	return strings.Join(bad, "; ")
}

// Verify checks the unpacked Python against the source's files and repairs
// it if anything changed; the running parent, which loaded the old files,
// is stopped (its jobs in flight end with ErrWorkerDied) and the next job
// starts a fresh one. An error means the repair failed.
//
// The check (hashing the whole tree: 6.6 ms on the 2-core CI host, twice
// per job) runs without the worker's lock: under it, every job on every
// device of the host queued behind every other job's hashing, before it
// started and after it ended. Only a repair takes the lock.
func (w *Worker) Verify() error {
	if w.intact() {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.verifyLocked()
}

// intact says whether the unpacked folder holds exactly the source's files.
// It reads the folder only (w.pyDir never changes: unpackFrom always
// returns the folder named by the source's hash), so it needs no lock.
func (w *Worker) intact() bool { return len(check(w.pyDir, w.man)) == 0 }

// verifyLocked is Verify with w.mu held: checks again and repairs.
func (w *Worker) verifyLocked() error {
	dir, bad, err := unpackFrom(w.cfg.CacheDir, w.man)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	if len(bad) == 0 {
		return nil
	}
	w.log.Warn("python worker files differed from the embedded ones; unpacked them again",
		"dir", dir, "files", summarize(bad), "parent_restarted", w.proc != nil)
	if w.proc != nil {
		p := w.proc
		w.proc = nil
		w.dropIdle(p)
		killGroup(p.cmd.Process.Pid)
	}
	return nil
}

// dropIdle kills the idle children of parent p: they were forked with the
// old files loaded.
func (w *Worker) dropIdle(p *proc) {
	w.imu.Lock()
	var gone []*idleChild
	for key, list := range w.idle {
		kept := list[:0]
		for _, c := range list {
			if c.p == p {
				gone = append(gone, c)
			} else {
				kept = append(kept, c)
			}
		}
		w.idle[key] = kept
	}
	w.imu.Unlock()
	for _, c := range gone {
		killGroup(c.pid)
	}
}
