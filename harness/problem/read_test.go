package problem

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Only regular files are read, once and bounded: a device, a fifo (which
// must not block the reader), a folder or a symlink to one is refused with
// a clear error, a file over the limit too.
func TestReadFileRefusesWhatIsNotASource(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Repeat("x", n)), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write("ok.py", 10)
	big := write("big.py", 5<<20)
	fifo := filepath.Join(dir, "fifo.py")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := func(name, to string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(to, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		path string
		want string // "" = read
		n    int
	}{
		{ok, "", 10},
		{link("ok_link.py", ok), "", 10},
		{"/proc/self/status", "", -1}, // stat says 0 bytes: what is read counts
		{"/dev/zero", "a device, not a regular file", 0},
		{link("zero_link.py", "/dev/zero"), "a device, not a regular file", 0},
		{fifo, "a fifo, not a regular file", 0},
		{link("fifo_link.py", fifo), "a fifo, not a regular file", 0},
		{dir, "a folder, not a regular file", 0},
		{link("dir_link.py", dir), "a folder, not a regular file", 0},
		{big, "over the 4 MiB limit", 0},
		{filepath.Join(dir, "missing.py"), "no such file", 0},
		{"/" + strings.Repeat("a", 5000), "at most 4096", 0},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.path)[:min(len(filepath.Base(c.path)), 20)], func(t *testing.T) {
			done := make(chan struct{})
			var b []byte
			var err error
			go func() { b, err = ReadFile("candidate", c.path); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("ReadFile blocked")
			}
			if c.want == "" {
				if err != nil || (c.n >= 0 && len(b) != c.n) || len(b) == 0 {
					t.Fatalf("read %d bytes, %v", len(b), err)
				}
				return
			}
			var ie *InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want an InputError with %q", err, c.want)
			}
			if len(err.Error()) > 2*MaxNameBytes+300 {
				t.Fatalf("error of %d bytes: names are clipped", len(err.Error()))
			}
		})
	}
}

// The callers' entry points refuse the same things: a candidate path and a
// reference path, /dev/zero and a fifo.
func TestResolveAndParseRefuseDevices(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "f.py")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/dev/zero", fifo} {
		if _, err := ParseCandidate(p, ""); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("ParseCandidate(%s): %v", p, err)
		}
		if _, err := Resolve(t.Context(), Ref{Reference: p}, nil); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Resolve(%s): %v", p, err)
		}
		if _, _, err := Read(Source{Path: p}, "reference"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Read(%s): %v", p, err)
		}
	}
}

// A name of megabytes is refused, and the refusal is bounded.
func TestNamesBounded(t *testing.T) {
	long := strings.Repeat("n", 4<<20)
	_, err := Resolve(t.Context(), Ref{Reference: long}, ResolverFunc(func(_ context.Context, name, _ string) (Problem, error) {
		t.Fatal("a 4 MiB name reached the resolver")
		return Problem{}, nil
	}))
	if err == nil || len(err.Error()) > 1024 {
		t.Fatalf("error of %d bytes: %.200v", len(errString(err)), err)
	}
	if got := Clip("é" + strings.Repeat("é", 300)); len(got) > MaxNameBytes+40 || !strings.HasSuffix(got, "(602 bytes)") {
		t.Fatalf("Clip: %q", got)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
