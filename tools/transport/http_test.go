package transport

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:8765", "", true},
		{"localhost:0", "", true},
		{"[::1]:8765", "", true},
		{"0.0.0.0:8765", "", false},
		{"0.0.0.0:8765", "t", true},
		{"10.1.2.3:80", "", false},
		{"nonsense", "t", false},
	}
	for _, tc := range tests {
		err := HTTPOptions{Addr: tc.addr, Token: tc.token}.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("Validate(%q, token=%q) = %v, want ok=%v", tc.addr, tc.token, err, tc.ok)
		}
	}
}

func TestGuard(t *testing.T) {
	h := Handler(server.NewMCPServer("t", "0"), HTTPOptions{Token: "k", AllowedOrigins: []string{"https://ide.example.com"}})
	tests := []struct {
		name   string
		origin string
		auth   string
		want   int
	}{
		{"no token", "", "", http.StatusUnauthorized},
		{"foreign origin beats a right token", "http://evil.example", "Bearer k", http.StatusForbidden},
		{"allow-listed origin", "https://ide.example.com", "Bearer k", http.StatusOK},
		{"loopback origin", "http://127.0.0.1:5173", "Bearer k", http.StatusOK},
		{"null origin", "null", "Bearer k", http.StatusForbidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
			req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			// A ping before initialize is a JSON-RPC matter, not an HTTP one:
			// anything the guard lets through answers 200 or 400, never 401/403.
			got := rec.Code
			if tc.want == http.StatusOK && (got == http.StatusUnauthorized || got == http.StatusForbidden) {
				t.Fatalf("status %d: %s", got, rec.Body.String())
			}
			if tc.want != http.StatusOK && got != tc.want {
				t.Fatalf("status %d, want %d", got, tc.want)
			}
		})
	}
}
