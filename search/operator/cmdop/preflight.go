package cmdop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
	"github.com/kevolve/kevolve-mcp/search"
)

// PreflightTimeout bounds the whole preflight: a run with an agent that
// cannot work must say so in seconds, before anything is evaluated.
const PreflightTimeout = 10 * time.Second

// preset is what the preflight knows about an agent CLI: how to ask it
// whether it is logged in (exit 0 when it is), how to log in, and the API
// it must reach (its base-URL variable overrides the default).
type presetInfo struct {
	status   []string
	login    string
	endpoint string
	baseEnv  string
}

var presets = map[string]presetInfo{
	"claude": {status: []string{"auth", "status"}, login: "claude auth login (or set ANTHROPIC_API_KEY)",
		endpoint: "https://api.anthropic.com", baseEnv: "ANTHROPIC_BASE_URL"},
	"codex": {status: []string{"login", "status"}, login: "codex login (or set OPENAI_API_KEY)",
		endpoint: "https://api.openai.com", baseEnv: "OPENAI_BASE_URL"},
}

// Preflight checks, within PreflightTimeout, that a preset's CLI is
// installed, logged in and can reach its API. cmd: operators are the
// user's own commands and are not checked. The error wraps
// search.ErrOperatorUnavailable and names the command that fixes it.
func (o *Op) Preflight(ctx context.Context) error {
	p, ok := presets[o.preset]
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, PreflightTimeout)
	defer cancel()
	bin, err := o.find(o.preset)
	if err != nil {
		return err
	}
	if err := o.loggedIn(ctx, bin, p); err != nil {
		return err
	}
	return reachable(ctx, o.name, p)
}

// loggedIn runs the CLI's status command; a non-zero exit is "not logged in".
func (o *Op) loggedIn(ctx context.Context, bin string, p presetInfo) error {
	sctx, cancel := context.WithTimeout(ctx, PreflightTimeout*6/10)
	defer cancel()
	cmd := exec.CommandContext(sctx, bin, p.status...)
	toolchain.KillGroupOnCancel(cmd)
	cmd.WaitDelay = time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	check := o.preset + " " + strings.Join(p.status, " ")
	switch {
	case sctx.Err() != nil:
		return fmt.Errorf("%w: operator %s: `%s` did not answer within %s; fix: check the CLI works, then %s",
			search.ErrOperatorUnavailable, o.name, check, PreflightTimeout*6/10, p.login)
	case err != nil:
		return fmt.Errorf("%w: operator %s is not logged in (`%s`: %v: %s); fix: %s",
			search.ErrOperatorUnavailable, o.name, check, err, firstLine(out.String()), p.login)
	}
	return nil
}

// reachable dials the API's host within what is left of ctx.
func reachable(ctx context.Context, name string, p presetInfo) error {
	base := p.endpoint
	if v := os.Getenv(p.baseEnv); v != "" {
		base = v
	}
	// Behind a proxy the CLI reaches the API through it: dial the proxy.
	for _, v := range []string{"HTTPS_PROXY", "https_proxy"} {
		if px := os.Getenv(v); px != "" && !strings.HasPrefix(base, "http://") {
			base = px
			break
		}
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%w: operator %s: %s=%q is not a URL", search.ErrOperatorUnavailable, name, p.baseEnv, base)
	}
	host := u.Host
	if u.Port() == "" {
		port := "443"
		if u.Scheme == "http" {
			port = "80"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		why := err.Error()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			why = "no answer within the preflight's " + PreflightTimeout.String()
		}
		return fmt.Errorf("%w: operator %s cannot reach %s (%s); fix: check the network or proxy (HTTPS_PROXY), or point %s at a reachable endpoint",
			search.ErrOperatorUnavailable, name, host, why, p.baseEnv)
	}
	c.Close()
	return nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return oneLine(s, 200)
}
