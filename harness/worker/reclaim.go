package worker

import (
	"io/fs"
	"os"
	"path/filepath"
)

// reclaim gives the server's user back the folders a job was allowed to
// write (Job.Writable): the child hands them to the unprivileged uid it
// runs the job as (worker/py/sandbox/layers.py), and what the job wrote there
// belongs to that uid until now. Best effort: a path that is gone is
// skipped.
func reclaim(paths []string) {
	if os.Geteuid() != 0 {
		return // the child never changed its uid
	}
	uid, gid := os.Getuid(), os.Getgid()
	for _, p := range paths {
		_ = filepath.WalkDir(p, func(path string, _ fs.DirEntry, err error) error {
			if err == nil {
				_ = os.Lchown(path, uid, gid)
			}
			return nil
		})
	}
}
