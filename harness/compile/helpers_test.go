package compile

import (
	"context"
	"os"
	"testing"
	"time"
)

// strict: KEVOLVE_TEST_STRICT=1 (the Makefile sets it) turns a missing
// toolchain into a failure instead of a skip.
func strict() bool { return os.Getenv("KEVOLVE_TEST_STRICT") == "1" }

func needTool(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := FindTool(n); err != nil {
			if strict() {
				t.Fatalf("KEVOLVE_TEST_STRICT=1 and %v", err)
			}
			t.Skipf("skipping: %v", err)
		}
	}
}

func needPython(t *testing.T) string {
	t.Helper()
	py, err := FindPython()
	if err != nil {
		if strict() {
			t.Fatalf("KEVOLVE_TEST_STRICT=1 and %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	return py
}

func mustCompile(t *testing.T, req Request) *Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Compile(ctx, req)
	if err != nil {
		t.Fatalf("Compile(%s): %v", req.Lang, err)
	}
	return res
}
