package search

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestWriteFileAtomicConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "out.json")
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := WriteFileAtomic(path, []byte(fmt.Sprintf("writer %02d", i)), 0o640); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) != len("writer 00") {
		t.Fatalf("want one whole writer's bytes, got %q (%v)", b, err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v (%v), want 0640", st.Mode().Perm(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "sub", ".out.json-*")); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}
