package problem

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.py")
	if err := os.WriteFile(ref, []byte("class Model: pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.py")
	if err := os.WriteFile(big, make([]byte, MaxSourceBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	corpus := ResolverFunc(func(_ context.Context, name, shapes string) (Problem, error) {
		if name == "llm/rmsnorm" {
			return Problem{Name: name, Reference: Source{Path: "/corpus/llm/rmsnorm/reference.py"}, Shapes: shapes,
				Work: Work{FLOPs: 1, Bytes: 2, Shapes: "large"}}, nil
		}
		return Problem{}, errors.New("no problem named " + name)
	})
	cases := []struct {
		name    string
		ref     Ref
		r       Resolver
		want    string // Problem.Name or Reference.Path or "inline"
		wantArg string // InputError.Arg when an error is expected
		msgHas  string
	}{
		{"file", Ref{Reference: ref}, corpus, ref, "", ""},
		{"corpus_name", Ref{Reference: "llm/rmsnorm", Shapes: "small"}, corpus, "llm/rmsnorm", "", ""},
		{"inline", Ref{ReferenceSource: "class Model: pass"}, nil, "inline", "", ""},
		{"both", Ref{Reference: ref, ReferenceSource: "x"}, corpus, "", "reference", "not both"},
		{"none", Ref{}, corpus, "", "reference", "required"},
		{"unknown_name", Ref{Reference: "llm/nope"}, corpus, "", "reference", "neither a file nor a known corpus problem: no problem named llm/nope"},
		{"missing_py_file", Ref{Reference: "/no/such.py"}, corpus, "", "reference", "no such file"},
		{"name_without_resolver", Ref{Reference: "llm/rmsnorm"}, nil, "", "reference", "no such file"},
		{"file_over_cap", Ref{Reference: big}, corpus, "", "reference", "4 MiB"},
		{"inline_over_cap", Ref{ReferenceSource: string(make([]byte, MaxSourceBytes+1))}, nil, "", "reference_source", "4 MiB"},
		{"bad_shapes", Ref{Reference: ref, Shapes: "huge"}, corpus, "", "shapes", "large or small"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Resolve(context.Background(), tc.ref, tc.r)
			if tc.wantArg != "" {
				var ie *InputError
				if !errors.As(err, &ie) || ie.Arg != tc.wantArg || !strings.Contains(err.Error(), tc.msgHas) {
					t.Fatalf("want InputError{%s} with %q, got %v", tc.wantArg, tc.msgHas, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := p.Reference.Path
			switch {
			case p.Name != "":
				got = p.Name
			case p.Reference.Code != "":
				got = "inline"
			}
			if got != tc.want || p.Shapes != tc.ref.Shapes {
				t.Fatalf("got %q (shapes %q)", got, p.Shapes)
			}
		})
	}
}

func TestParseCandidateAndRead(t *testing.T) {
	dir := t.TempDir()
	cand := filepath.Join(dir, "c.py")
	if err := os.WriteFile(cand, []byte("class ModelNew: pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := ParseCandidate(cand, ""); err != nil || c.Path != cand {
		t.Fatalf("file: %+v %v", c, err)
	}
	for _, tc := range []struct{ path, src, arg, msg string }{
		{cand, "x", "candidate", "not both"},
		{"", "", "candidate", "required"},
		{dir, "", "candidate", "a folder, not a regular file"},
		{"", string(make([]byte, MaxSourceBytes+1)), "candidate_source", "4 MiB"},
	} {
		_, err := ParseCandidate(tc.path, tc.src)
		var ie *InputError
		if !errors.As(err, &ie) || ie.Arg != tc.arg || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("ParseCandidate(%q, %d bytes): %v", tc.path, len(tc.src), err)
		}
	}
	code, abs, err := Read(Source{Path: cand}, "candidate")
	if err != nil || code != "class ModelNew: pass\n" || abs != cand {
		t.Fatalf("Read: %q %q %v", code, abs, err)
	}
	if _, _, err := Read(Source{Path: filepath.Join(dir, "none.py")}, "candidate"); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("Read missing: %v", err)
	}
}
