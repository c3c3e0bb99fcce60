package problem

// Reading a source file once, and bounding the names callers give: every
// reference, candidate, problem and kernel file the module reads from a
// caller's path goes through ReadFile, so the bytes that are hashed (cache
// keys, node ids) are the bytes that run, and a device, fifo or folder is
// refused before anything reads it.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxNameBytes bounds a name a caller gives (a problem name, a run label);
// MaxPathBytes a path (Linux's PATH_MAX).
const (
	MaxNameBytes = 256
	MaxPathBytes = 4096
)

// ReadFile reads a caller's file once: only a regular file (through a
// symlink too) of at most MaxSourceBytes. It opens without blocking, so a
// fifo is refused rather than waited on, and it trusts the bytes read, not
// the size stat reports (a device or /proc file says 0). arg names the
// argument in the InputError.
func ReadFile(arg, path string) ([]byte, error) {
	if len(path) > MaxPathBytes {
		return nil, Inputf(arg, "path of %d bytes: at most %d", len(path), MaxPathBytes)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, Inputf(arg, "%q: no such file", Clip(path))
		}
		return nil, Inputf(arg, "read %q: %v", Clip(path), errors.Unwrap(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, Inputf(arg, "stat %q: %v", Clip(path), err)
	}
	if !st.Mode().IsRegular() {
		return nil, Inputf(arg, "%q is %s, not a regular file: give a source file", Clip(path), kind(st.Mode()))
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSourceBytes+1))
	if err != nil {
		return nil, Inputf(arg, "read %q: %v", Clip(path), err)
	}
	if err := checkSize(arg, len(b)); err != nil {
		return nil, err
	}
	return b, nil
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a fifo"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// Clip bounds a caller's string for an error message: its first
// MaxNameBytes bytes and how long it was.
func Clip(s string) string {
	if len(s) <= MaxNameBytes {
		return s
	}
	cut := MaxNameBytes
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
