package kernelbench

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Problem is one KernelBench problem file.
type Problem struct {
	Level int    `json:"level"`
	ID    int    `json:"id"`
	Name  string `json:"name"` // the file stem: {id}_{name}
	Path  string `json:"path"`
}

// Key names a problem the way KernelBench's folders do: level1/12_Matmul...
func (p Problem) Key() string { return fmt.Sprintf("level%d/%s", p.Level, p.Name) }

// problemStem matches KernelBench's file stems: {id}_{name}.
var problemStem = regexp.MustCompile(`^(\d+)_(.+)$`)

// ParseLevels reads "1", "1,2" or "1,2,3" (spaces allowed).
func ParseLevels(s string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("level %q: want a positive number such as 1, or a list such as 1,2,3", f)
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no level given: want 1, 2, 3 or a list such as 1,2")
	}
	sort.Ints(out)
	return out, nil
}

// levelsRoot is the folder that holds level1, level2...: DIR/KernelBench in a
// checkout, or DIR itself.
func levelsRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("kernelbench dir %q: %w", dir, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("kernelbench dir: %w", err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("kernelbench dir %s is not a folder", abs)
	}
	if st, err := os.Stat(filepath.Join(abs, "KernelBench")); err == nil && st.IsDir() {
		return filepath.Join(abs, "KernelBench"), nil
	}
	return abs, nil
}

// Discover lists the problems of the given levels under a KernelBench
// checkout (or its KernelBench/ folder), sorted by level then id.
func Discover(dir string, levels []int) ([]Problem, error) {
	root, err := levelsRoot(dir)
	if err != nil {
		return nil, err
	}
	var out []Problem
	for _, lv := range levels {
		ld := filepath.Join(root, fmt.Sprintf("level%d", lv))
		ents, err := os.ReadDir(ld)
		if err != nil {
			return nil, fmt.Errorf("kernelbench level %d: %w (want %s/level%d/{id}_{name}.py)", lv, err, root, lv)
		}
		n := 0
		for _, e := range ents {
			stem, ok := strings.CutSuffix(e.Name(), ".py")
			m := problemStem.FindStringSubmatch(stem)
			if e.IsDir() || !ok || m == nil {
				continue
			}
			id, _ := strconv.Atoi(m[1])
			out = append(out, Problem{Level: lv, ID: id, Name: stem, Path: filepath.Join(ld, e.Name())})
			n++
		}
		if n == 0 {
			return nil, fmt.Errorf("kernelbench level %d: no {id}_{name}.py files in %s", lv, ld)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Level != out[j].Level {
			return out[i].Level < out[j].Level
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}
