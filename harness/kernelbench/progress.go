package kernelbench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progressBar reports the sweep on stderr: on a terminal one line redrawn
// in place (done/total, passes, tool errors, ETA, the pair in flight),
// elsewhere (a log file, CI) one plain line per finished pair.
type progressBar struct {
	w     io.Writer
	tty   bool
	total int

	mu       sync.Mutex
	start    time.Time
	done     int
	resumed  int
	pass     int
	toolErrs int
	current  string
	lastLen  int
	full     bool // tool errors whole, not their headline (--verbose)
}

func newProgressBar(w io.Writer, total int, full bool) *progressBar {
	return &progressBar{w: w, tty: isTerminal(w), total: total, start: time.Now(), full: full}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// started names the pair now being evaluated (terminal only).
func (b *progressBar) started(name string) {
	if b == nil || b.w == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.current = name
	if b.tty {
		b.draw()
	}
}

// finished counts one pair.
func (b *progressBar) finished(r Record) {
	if b == nil || b.w == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done++
	if r.Resumed {
		b.resumed++
	}
	if r.Correct() {
		b.pass++
	}
	if r.ToolError != "" {
		b.toolErrs++
	}
	if b.tty {
		b.draw()
		return
	}
	what := r.Verdict
	if r.ToolError != "" {
		what = "TOOL ERROR: " + errorText(r.ToolError, 200, b.full)
	}
	if r.Resumed {
		what += " (resumed)"
	}
	fmt.Fprintf(b.w, "[%d/%d] %s %s %.1fs  pass %d  ETA %s\n", b.done, b.total, r.Problem, what, r.WallS, b.pass, b.eta())
}

// eta extrapolates from the pairs evaluated so far (resumed ones cost nothing).
func (b *progressBar) eta() string {
	evaluated := b.done - b.resumed
	left := b.total - b.done
	if left == 0 {
		return "0s"
	}
	if evaluated == 0 {
		return "?"
	}
	per := time.Since(b.start) / time.Duration(evaluated)
	return (per * time.Duration(left)).Round(time.Second).String()
}

func (b *progressBar) draw() {
	const width = 24
	filled := 0
	if b.total > 0 {
		filled = width * b.done / b.total
	}
	line := fmt.Sprintf("[%s%s] %d/%d  pass %d", strings.Repeat("=", filled), strings.Repeat(" ", width-filled), b.done, b.total, b.pass)
	if b.toolErrs > 0 {
		line += fmt.Sprintf("  tool errors %d", b.toolErrs)
	}
	line += "  ETA " + b.eta()
	if b.current != "" && b.done < b.total {
		line += "  " + b.current
	}
	if len(line) > 110 {
		line = line[:110]
	}
	pad := ""
	if b.lastLen > len(line) {
		pad = strings.Repeat(" ", b.lastLen-len(line))
	}
	b.lastLen = len(line)
	fmt.Fprint(b.w, "\r"+line+pad)
}

// close ends the terminal line.
func (b *progressBar) close() {
	if b == nil || b.w == nil || !b.tty {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprintln(b.w)
}

// errorText is the error whole when full, else its headline.
func errorText(s string, n int, full bool) string {
	if full {
		return strings.TrimSpace(s)
	}
	return headline(s, n)
}

// headline shortens an error to one line of at most n bytes: its first
// line, and where it goes on (a Python traceback) its last line too, which
// names the exception.
func headline(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	out := lines[0]
	if len(lines) > 1 {
		out = strings.TrimSuffix(strings.TrimSuffix(out, "Traceback (most recent call last):"), " ") + " … " + lines[len(lines)-1]
	}
	if len(out) > n {
		out = out[:n] + "…"
	}
	return out
}
