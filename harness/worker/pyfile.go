package worker

import "fmt"

// PyFile returns one file of the embedded worker Python (e.g. "workcount.py"),
// for other harness packages that run a module of it outside the worker: the
// sol package's trace script imports the shared work-counting core this way,
// so there is one copy of it.
func PyFile(name string) ([]byte, error) {
	b, err := pyFS.ReadFile("py/" + name)
	if err != nil {
		return nil, fmt.Errorf("embedded worker python %s: %w", name, err)
	}
	return b, nil
}
