package toolchain

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name     string
		cmd      Cmd
		timeout  time.Duration
		code     int
		stdout   string
		timedOut bool
		exitErr  bool
	}{
		{"ok", Cmd{Name: "sh", Args: []string{"-c", "echo out; echo err >&2"}}, 0, 0, "out\n", false, false},
		{"stdin_env_dir", Cmd{Name: "sh", Args: []string{"-c", "cat; echo $KV_X; pwd"}, Stdin: "in\n", Env: []string{"KV_X=1"}, Dir: "/"}, 0, 0, "in\n1\n/\n", false, false},
		{"exit_code", Cmd{Name: "sh", Args: []string{"-c", "exit 3"}}, 0, 3, "", false, true},
		{"deadline_kills_group", Cmd{Name: "sh", Args: []string{"-c", "sleep 30 & sleep 30"}}, 300 * time.Millisecond, -1, "", true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ctx
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				c, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			t0 := time.Now()
			out, err := Run(c, tc.cmd)
			if out.ExitCode != tc.code || out.Stdout != tc.stdout || out.TimedOut != tc.timedOut {
				t.Fatalf("got %+v, %v", out, err)
			}
			var exit *exec.ExitError
			if tc.exitErr != errors.As(err, &exit) {
				t.Errorf("exit error %v", err)
			}
			if tc.timedOut && (err == nil || !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > 5*time.Second) {
				t.Errorf("deadline: %v after %s", err, time.Since(t0))
			}
		})
	}
	if _, err := Run(ctx, Cmd{Name: "/nonexistent/tool"}); err == nil {
		t.Error("a missing tool ran")
	}
}

func TestDecodeLastJSON(t *testing.T) {
	var v struct{ A int }
	cases := []struct {
		name, out string
		want      int
		errIs     error
		script    bool
	}{
		{"last_object_wins", "{\"a\": 1}\nnoise\n{\"a\": 2}\n==PROF== done\n", 2, nil, false},
		{"script_error", "{\"error\": \"boom\"}\n", 0, nil, true},
		{"none", "just text\n", 0, ErrNoJSON, false},
	}
	for _, tc := range cases {
		v.A = 0
		err := DecodeLastJSON(tc.out, &v)
		var se *ScriptError
		switch {
		case tc.script && (!errors.As(err, &se) || se.Msg != "boom"):
			t.Errorf("%s: %v", tc.name, err)
		case tc.errIs != nil && !errors.Is(err, tc.errIs):
			t.Errorf("%s: %v", tc.name, err)
		case !tc.script && tc.errIs == nil && (err != nil || v.A != tc.want):
			t.Errorf("%s: %v %d", tc.name, err, v.A)
		}
	}
}

func TestTrimAndTail(t *testing.T) {
	s := strings.Repeat("a", 50) + strings.Repeat("b", 50)
	if got := Trim(s, 10, 10); !strings.HasPrefix(got, strings.Repeat("a", 10)) || !strings.HasSuffix(got, strings.Repeat("b", 10)) || !strings.Contains(got, "[80 bytes trimmed]") {
		t.Errorf("Trim: %q", got)
	}
	if Trim("short", 10, 10) != "short" {
		t.Error("Trim changed a short string")
	}
	if got := Tail("  "+s+"  ", 5); got != "…bbbbb" {
		t.Errorf("Tail: %q", got)
	}
}
