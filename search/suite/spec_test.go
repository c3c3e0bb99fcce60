package suite

import (
	"context"
	"fmt"
	"testing"
)

func TestParseSpec(t *testing.T) {
	cases := []struct {
		in   string
		want string
		bad  bool
	}{
		{in: "corpus", want: "{corpus   []}"},
		{in: "corpus:llm", want: "{corpus llm  []}"},
		{in: "kernelbench:/x/KernelBench:1,2", want: "{kernelbench  /x/KernelBench [1 2]}"},
		{in: "kernelbench:/x/KB:1-3", want: "{kernelbench  /x/KB [1 2 3]}"},
		{in: "kernelbench:/x/KB", want: "{kernelbench  /x/KB []}"},
		{in: "kernelbench:", bad: true},
		{in: "tritonbench", bad: true},
	}
	for _, c := range cases {
		sp, err := ParseSpec(c.in)
		if (err != nil) != c.bad || (!c.bad && fmt.Sprint(sp) != c.want) {
			t.Errorf("%s: %v %v", c.in, sp, err)
		}
	}
}

func TestResolveCorpusByTag(t *testing.T) {
	probs, skipped, err := Resolve(context.Background(), nil, Spec{Kind: "corpus", Tag: "llm"}, "cpu", "c", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) < 5 {
		t.Errorf("%d llm problems with a C start (skipped %v)", len(probs), skipped)
	}
	for _, p := range probs {
		if p.Start == "" || p.Problem.Target != "cpu" {
			t.Errorf("%+v", p.Problem)
		}
	}
}
