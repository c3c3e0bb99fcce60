package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func startCoordinator(t *testing.T, q *Queue, token string) *Coordinator {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := &Coordinator{Queue: q, Token: token, ClaimWait: time.Second}
	if err := c.Listen(ctx, "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	return c
}

// zeros is an endless reader of a JSON-ish body.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), z.n)
	for i := range p[:k] {
		p[i] = ' '
	}
	z.n -= k
	return int(k), nil
}

func TestCoordinatorSecurity(t *testing.T) {
	q := newTestQueue(t, nil)
	c := startCoordinator(t, q, "s3cret-token")
	reg, _ := json.Marshal(RegisterRequest{ID: "w", Name: "w", Devices: []Device{{Target: "cpu"}}})
	post := func(path, auth string, body io.Reader, length int64) int {
		req, _ := http.NewRequest(http.MethodPost, c.URL()+path, body)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		req.ContentLength = length
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	cases := []struct {
		name string
		auth string
		body func() (io.Reader, int64)
		want int
	}{
		{"no token", "", func() (io.Reader, int64) { return bytes.NewReader(reg), int64(len(reg)) }, 401},
		{"wrong token", "Bearer s3cret-tokeN", func() (io.Reader, int64) { return bytes.NewReader(reg), int64(len(reg)) }, 401},
		{"prefix of the token", "Bearer s3cret", func() (io.Reader, int64) { return bytes.NewReader(reg), int64(len(reg)) }, 401},
		{"not bearer", "Basic s3cret-token", func() (io.Reader, int64) { return bytes.NewReader(reg), int64(len(reg)) }, 401},
		{"right token", "Bearer s3cret-token", func() (io.Reader, int64) { return bytes.NewReader(reg), int64(len(reg)) }, 200},
		{"100 MB declared", "Bearer s3cret-token", func() (io.Reader, int64) { return &zeros{100 << 20}, 100 << 20 }, 413},
		{"100 MB chunked", "Bearer s3cret-token", func() (io.Reader, int64) { return io.MultiReader(strings.NewReader(`{"id":"`), &zeros{100 << 20}), -1 }, 413},
		{"bad JSON", "Bearer s3cret-token", func() (io.Reader, int64) { return strings.NewReader("{"), 1 }, 400},
	}
	for _, tc := range cases {
		body, n := tc.body()
		if got := post(PathRegister, tc.auth, body, n); got != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.want)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, c.URL()+PathStatus, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("status without a token: %d", resp.StatusCode)
	}
}

func TestCoordinatorBindsLoopbackWithoutToken(t *testing.T) {
	q := newTestQueue(t, nil)
	c := &Coordinator{Queue: q}
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		if err := c.Listen(context.Background(), addr); !errors.Is(err, ErrNeedToken) {
			t.Errorf("listen %s without a token: %v, want ErrNeedToken", addr, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := c.Listen(ctx, "127.0.0.1:0"); err != nil {
		t.Fatalf("loopback without a token: %v", err)
	}
	for addr, want := range map[string]bool{"127.0.0.1:1": true, "localhost:1": true, "[::1]:1": true, "10.0.0.1:1": false, ":1": false} {
		if IsLoopback(addr) != want {
			t.Errorf("IsLoopback(%s) != %v", addr, want)
		}
	}
}
