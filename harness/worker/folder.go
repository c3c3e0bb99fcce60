package worker

// A job's folder: work/ (the candidate's cwd, home and temp, the only place
// its sandbox may write) and judge/ (the harness's files: arguments, log,
// result, board, sandbox report; opened by the child before it enters the
// sandbox, not writable once it has).

import (
	"fmt"
	"os"
	"path/filepath"
)

// jobFolder makes a fresh job folder, or readies the folder of the idle
// child that takes the job: its work/ emptied but for its build caches
// (.cache), its result and log emptied (the child keeps their fds open).
func (w *Worker) jobFolder(id int64, idle *idleChild) (string, error) {
	if idle != nil && idle.dir != "" {
		work := filepath.Join(idle.dir, "work")
		ents, _ := os.ReadDir(work)
		for _, e := range ents {
			if e.Name() != ".cache" {
				if err := os.RemoveAll(filepath.Join(work, e.Name())); err != nil {
					return "", fmt.Errorf("worker: empty a kept child's folder: %w", err)
				}
			}
		}
		for _, f := range []string{"result.json", "log.txt"} {
			if err := os.Truncate(filepath.Join(idle.dir, "judge", f), 0); err != nil && !os.IsNotExist(err) {
				return "", fmt.Errorf("worker: empty a kept child's %s: %w", f, err)
			}
		}
		// The previous job's judge report must not stand for this one: a
		// candidate that forges its result would find it there.
		if err := os.Remove(filepath.Join(idle.dir, "judge", "judge.json")); err != nil && !os.IsNotExist(err) {
			return "", fmt.Errorf("worker: clear a kept child's judge report: %w", err)
		}
		return idle.dir, nil
	}
	dir, err := os.MkdirTemp(w.jobDir, fmt.Sprintf("job-%d-", id))
	if err != nil {
		return "", fmt.Errorf("worker: job dir: %w", err)
	}
	// Searchable, not listable, by the unprivileged user the child becomes.
	if err := os.Chmod(dir, 0o711); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("worker: job dir: %w", err)
	}
	for _, sub := range []string{"work", "judge"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("worker: job dir: %w", err)
		}
	}
	return dir, nil
}
