package retrieval

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestPrintSearch(t *testing.T) {
	ix := openBuiltin(t)
	ctx := context.Background()
	tests := []struct {
		name   string
		q      Query
		asJSON bool
		want   []string // substrings of the output
		check  func(t *testing.T, out []byte)
	}{
		{name: "table with device scope", q: Query{Text: "bank conflicts", Device: "mi300x", K: 3},
			want: []string{"device scope: amd/cdna3", "1.", "guidance/shared-memory-bank-conflicts.md"}},
		{name: "operator lists constraints", q: Query{Text: "tile sizes", Operator: "gemm"},
			want: []string{"constraints that apply:", "constraints/"}},
		{name: "json", q: Query{Text: "coalescing", K: 4}, asJSON: true,
			check: func(t *testing.T, out []byte) {
				var r Response
				if err := json.Unmarshal(out, &r); err != nil || len(r.Results) != 4 {
					t.Fatalf("%v: %s", err, out)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := ix.Search(ctx, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := PrintSearch(&out, resp, tt.asJSON); err != nil {
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

func TestPrintList(t *testing.T) {
	ix := openBuiltin(t)
	var out bytes.Buffer
	if err := PrintList(&out, ix.List(), false); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"PATH", "guidance/coalescing.md", "nvidia/hopper", "documents"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("list lacks %q", w)
		}
	}
	out.Reset()
	if err := PrintList(&out, ix.List(), true); err != nil {
		t.Fatal(err)
	}
	var docs []DocInfo
	if err := json.Unmarshal(out.Bytes(), &docs); err != nil || len(docs) < 100 {
		t.Fatalf("%v: %d docs", err, len(docs))
	}
}

// A k out of range is refused in words, not replaced by the default.
func TestSearchRejectsBadK(t *testing.T) {
	ix := openBuiltin(t)
	for _, k := range []int{-3, -1, MaxK + 1} {
		_, err := ix.Search(context.Background(), Query{Text: "coalescing", K: k})
		if err == nil || !strings.Contains(err.Error(), "k must be between 1 and 50") {
			t.Errorf("k=%d: err = %v", k, err)
		}
	}
}
