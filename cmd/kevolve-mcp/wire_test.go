package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
)

// wireMessage is one JSON-RPC message as it crossed the server's stdio.
type wireMessage struct {
	fromClient bool
	raw        json.RawMessage
}

// wire records every line written to and read from the server, so a
// transcript is made of what was on the wire, not of what a client library
// decoded from it.
type wire struct {
	mu   sync.Mutex
	msgs []wireMessage
	part [2][]byte // an unfinished line per direction
}

func (w *wire) add(fromClient bool, p []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := 0
	if fromClient {
		d = 1
	}
	w.part[d] = append(w.part[d], p...)
	for {
		i := bytes.IndexByte(w.part[d], '\n')
		if i < 0 {
			return
		}
		line := bytes.TrimSpace(w.part[d][:i])
		w.part[d] = w.part[d][i+1:]
		if len(line) > 0 {
			w.msgs = append(w.msgs, wireMessage{fromClient: fromClient, raw: append(json.RawMessage(nil), line...)})
		}
	}
}

// messages returns what was recorded so far.
func (w *wire) messages() []wireMessage {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]wireMessage(nil), w.msgs...)
}

type wireWriter struct {
	w  *wire
	wc io.WriteCloser
}

func (t wireWriter) Write(p []byte) (int, error) {
	t.w.add(true, p)
	return t.wc.Write(p)
}

func (t wireWriter) Close() error { return t.wc.Close() }

type wireReader struct {
	w *wire
	r io.Reader
}

func (t wireReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.w.add(false, p[:n])
	return n, err
}

// recordedStdio starts the real binary with --stdio and connects mcp-go's
// client to it through recording pipes. The process is killed at cleanup.
func recordedStdio(t *testing.T, env []string) (*client.Client, *wire) {
	t.Helper()
	cmd := exec.Command(binary, "--stdio")
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &wire{}
	c := client.NewClient(transport.NewIO(wireReader{w, stdout}, wireWriter{w, stdin}, io.NopCloser(&bytes.Buffer{})))
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("server stderr (tail):\n%s", tail(stderr.String(), 4000))
		}
	})
	return c, w
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
