package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/sandbox"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// binary is the kevolve-mcp built once for these tests: end-to-end means the
// real executable, its flags and its stdout discipline.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kevolve-e2e")
	if err != nil {
		panic(err)
	}
	// On the GPU machine there is no Go toolchain: KEVOLVE_BIN names the
	// binary built beside the test binary (make gpu-bins).
	binary = os.Getenv("KEVOLVE_BIN")
	if binary == "" {
		binary = filepath.Join(dir, "kevolve-mcp")
		out, err := exec.Command("go", "build", "-tags", "sqlite_fts5", "-o", binary, ".").CombinedOutput()
		if err != nil {
			os.Stderr.Write(out)
			panic(err)
		}
	}
	// The tests' servers get a database of their own, not the user's.
	os.Setenv("XDG_DATA_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func initialize(t *testing.T, c *client.Client) *mcp.InitializeResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "0"}
	res, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return res
}

func callDeviceInfo(t *testing.T, c *client.Client) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "device_info"
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError {
		t.Fatalf("device_info: %v %+v", err, res)
	}
	m, ok := res.StructuredContent.(map[string]any)
	if !ok {
		t.Fatalf("structured content %T", res.StructuredContent)
	}
	return m
}

func TestStdioEndToEnd(t *testing.T) {
	c, err := client.NewStdioMCPClient(binary, nil, "--stdio")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res := initialize(t, c)
	if res.ServerInfo.Name != "kevolve-mcp" || !strings.Contains(res.Instructions, "run_kernel") {
		t.Fatalf("initialize: %+v", res.ServerInfo)
	}
	tools, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list: %v", err)
	}
	info := callDeviceInfo(t, c)
	if _, ok := info["cpu"]; !ok {
		t.Fatalf("device_info lacks cpu: %v", info)
	}
}

// httpServer is one kevolve-mcp --http process.
type httpServer struct {
	cmd *exec.Cmd
	url string
}

var urlRe = regexp.MustCompile(`url=(http://\S+/mcp)`)

func startHTTP(t *testing.T, args ...string) *httpServer {
	t.Helper()
	cmd := exec.Command(binary, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &httpServer{cmd: cmd}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := urlRe.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case s.url = <-found:
	case <-time.After(20 * time.Second):
		t.Fatal("server did not print its URL")
	}
	return s
}

func (s *httpServer) loopbackURL() string {
	// A wildcard bind prints 0.0.0.0 or [::]: connect over IPv4 loopback.
	u := strings.Replace(s.url, "0.0.0.0", "127.0.0.1", 1)
	return strings.Replace(u, "[::]", "127.0.0.1", 1)
}

func post(t *testing.T, url string, hdr map[string]string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" { // net/http sends req.Host, not a Host header
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestHTTPLoopbackSession(t *testing.T) {
	s := startHTTP(t, "--http", "127.0.0.1:0")
	c, err := client.NewStreamableHttpClient(s.url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	initialize(t, c)
	callDeviceInfo(t, c)

	if code := post(t, s.url, map[string]string{"Origin": "http://evil.example"}); code != http.StatusForbidden {
		t.Errorf("foreign Origin: status %d, want 403", code)
	}
	if code := post(t, s.url, map[string]string{"Origin": "http://localhost:3000"}); code != http.StatusOK {
		t.Errorf("loopback Origin: status %d, want 200", code)
	}
	if code := post(t, s.url, map[string]string{"Host": "evil.example"}); code == http.StatusOK {
		t.Errorf("rebinding Host accepted")
	}
	// Oversized bodies are cut off, not buffered.
	big := strings.Repeat("x", 9<<20)
	resp, err := http.Post(s.url, "application/json", strings.NewReader(big))
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("9 MiB body accepted")
		}
	}
	// Graceful shutdown on SIGTERM: exit status 0.
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Error("no exit after SIGTERM")
	}
}

func TestHTTPNonLoopbackNeedsToken(t *testing.T) {
	out, err := exec.Command(binary, "--http", "0.0.0.0:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "without a bearer token") {
		t.Fatalf("non-loopback bind without token started: %v %s", err, out)
	}
	s := startHTTP(t, "--http", "0.0.0.0:0", "--token", "s3cret")
	url := s.loopbackURL() // traffic stays on loopback; the bind is all interfaces
	if code := post(t, url, nil); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
	if code := post(t, url, map[string]string{"Authorization": "Bearer wrong"}); code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d, want 401", code)
	}
	if code := post(t, url, map[string]string{"Authorization": "Bearer s3cret"}); code != http.StatusOK {
		t.Errorf("right token: %d, want 200", code)
	}
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	initialize(t, c)
	callDeviceInfo(t, c)
}

func TestDoctorWithoutGPUExitsZero(t *testing.T) {
	out, err := exec.Command(binary, "doctor", "--json").Output()
	if err != nil {
		t.Fatalf("doctor: %v", err)
	}
	var r map[string]any
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("doctor --json is not JSON: %v\n%s", err, out)
	}
	if _, ok := r["cpu"]; !ok {
		t.Fatal("no cpu in doctor output")
	}
	// Every sandbox layer is listed, active or not, with what a host
	// without it loses; the ones Go applies are active everywhere.
	var d struct {
		Sandbox []sandbox.Layer `json:"sandbox"`
	}
	if err := json.Unmarshal(out, &d); err != nil || len(d.Sandbox) != len(sandbox.Layers) {
		t.Fatalf("doctor's sandbox layers: %v %+v", err, d.Sandbox)
	}
	for _, l := range d.Sandbox {
		if l.Without == "" || (l.Name == "env" || l.Name == "output_cap") && !l.Active {
			t.Errorf("layer %+v", l)
		}
		t.Logf("%s active=%v: %s", l.Name, l.Active, l.Detail)
	}
	// The profiled process's jail, under each kind of profiler: every
	// layer listed, and none missing that an evaluation's sandbox has here:
	// the network is kept out for the profiler, and under an injecting
	// profiler a cgroup stands in for the PID namespace.
	active := map[string]bool{}
	for _, l := range d.Sandbox {
		active[l.Name] = l.Active
	}
	var p struct {
		Profiled []sandbox.Profiled `json:"profiled"`
	}
	if err := json.Unmarshal(out, &p); err != nil || len(p.Profiled) != 2 {
		t.Fatalf("doctor's profiled jails: %v %+v", err, p.Profiled)
	}
	for _, j := range p.Profiled {
		if len(j.Layers) != len(sandbox.Layers) {
			t.Fatalf("%s: %d layers", j.Profilers, len(j.Layers))
		}
		for _, l := range j.Layers {
			if active[l.Name] && !l.Active && l.Replaced == "" && l.Kept == "" {
				t.Errorf("%s: layer %s missing: %s", j.Profilers, l.Name, l.Detail)
			}
		}
	}
}

// make run's main job: on this machine (CPU, or the GPU where there is one)
// the default problem's start kernel passes and is placed against SOL.
// TestDemo guards `make run`'s main job: an evolve run with the tuner on the
// bundled problem, progress on stderr, then the best kernel's speedup over
// its start and over eager, its % of SOL and the report's path.
func TestDemo(t *testing.T) {
	toolchaintest.Python(t)
	cmd := exec.Command(binary, "evolve", "--problem", "other/matmul_fp32", "--operator", "tuner", "--budget", "6", "--seed", "3")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("evolve: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	for _, want := range []string{`(?m)^status\s+done: evaluation budget of 6 spent`, `(?m)^evaluations\s+6 `,
		`(?m)^best kernel\s+#\d+ pass`, `(?m)^  over start\s+\d+\.\d+x`, `(?m)^  over eager\s+\d+\.\d+x`,
		`(?m)^  of speed of light\s+\d+\.\d%`, `(?m)^report\s+\S+`} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("evolve output lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`\[evolve \w+\] 6/6 evals( \(\d+ failed\))? · best #\d+ \d+\.\d+x over start`).Match(stderr.Bytes()) {
		t.Errorf("no progress line on stderr:\n%s", stderr.String())
	}
	m := regexp.MustCompile(`(?m)^report\s+(\S+)$`).FindSubmatch(out)
	if m == nil {
		t.Fatal("no report path")
	}
	if _, err := os.Stat(string(m[1])); err != nil {
		t.Errorf("report not written: %v", err)
	}
}
