package retrieval

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestKBCommand(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	user := fixtureSource(t).Origin
	tests := []struct {
		name    string
		args    []string
		want    []string // substrings of the output
		wantErr string
		check   func(t *testing.T, out []byte)
	}{
		{name: "search table, flags after the words", args: []string{"search", "bank", "conflicts", "--device", "mi300x", "-k", "3"},
			want: []string{"device scope: amd/cdna3", "1.", "guidance/shared-memory-bank-conflicts.md"}},
		{name: "search json with a user dir", args: []string{"search", "--json", "--kb", user, "zebra", "coalescing", "fixture"},
			check: func(t *testing.T, out []byte) {
				var r Response
				if err := json.Unmarshal(out, &r); err != nil {
					t.Fatalf("%v: %s", err, out)
				}
				if len(r.Results) != 5 || !strings.HasPrefix(r.Results[0].Path, "mykb/") {
					t.Fatalf("results %v", paths(r.Results))
				}
			}},
		{name: "search with operator lists constraints", args: []string{"search", "--operator", "gemm", "tile", "sizes"},
			want: []string{"constraints that apply:", "constraints/"}},
		{name: "list table", args: []string{"list"}, want: []string{"PATH", "guidance/coalescing.md", "nvidia/hopper", "documents"}},
		{name: "list json", args: []string{"list", "--json"},
			check: func(t *testing.T, out []byte) {
				var docs []DocInfo
				if err := json.Unmarshal(out, &docs); err != nil || len(docs) < 100 {
					t.Fatalf("%v: %d docs", err, len(docs))
				}
			}},
		{name: "unknown subcommand", args: []string{"delete"}, wantErr: "unknown subcommand"},
		{name: "bad flag", args: []string{"search", "--bogus", "x"}, wantErr: "bogus"},
		{name: "empty query", args: []string{"search"}, wantErr: "empty query"},
		{name: "no subcommand", args: nil, wantErr: "usage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := KBCommand(ctx, db, nil, tt.args, &out)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			if tt.check != nil {
				tt.check(t, out.Bytes())
			}
		})
	}
}
