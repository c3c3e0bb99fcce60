package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

// layoutProbe runs in the page after its own script and records what a
// person would see wrong: the roof's label crossed by the roof, tick labels
// that are not powers of ten, tree labels outside the tree's box, and the
// evaluations card.
const layoutProbe = `<script>
addEventListener('load', function () {
  var out = {roofHits: -1, ticks: [], clipped: [], evals: ''};
  var svg = document.getElementById('roofline');
  if (svg) {
    var lab = svg.querySelector('.roof-label'), roof = svg.querySelector('path.roof');
    var bb = lab.getBBox(), L = roof.getTotalLength(), hits = 0;
    for (var s = 0; s <= L; s += 0.5) {
      var p = roof.getPointAtLength(s);
      if (p.x >= bb.x - 1 && p.x <= bb.x + bb.width + 1 && p.y >= bb.y - 1 && p.y <= bb.y + bb.height + 1) hits++;
    }
    out.roofHits = hits; out.roofDebug = [bb.x, bb.y, bb.width, bb.height].map(Math.round).join(',') + ' ' + roof.getAttribute('d');
    svg.querySelectorAll('text.tick').forEach(function (t) { out.ticks.push(t.textContent); });
  }
  var tree = document.getElementById('tree');
  if (tree) {
    var vb = tree.viewBox.baseVal;
    tree.querySelectorAll('text.nlabel').forEach(function (t) {
      var b = t.getBBox();
      if (b.x < vb.x || b.y < vb.y || b.x + b.width > vb.x + vb.width || b.y + b.height > vb.y + vb.height)
        out.clipped.push(t.textContent + ' at ' + [b.x, b.y, b.width, b.height].map(Math.round).join(','));
    });
  }
  document.querySelectorAll('.card').forEach(function (c) {
    if (/evaluations/.test(c.textContent)) out.evals = c.textContent.replace(/\s+/g, ' ').trim();
  });
  document.body.setAttribute('data-layout', JSON.stringify(out));
});
</script>`

// The report's layout in a real browser: the best node's label (the root,
// at the tree's left edge) whole, the roof's label clear of the roof, tick
// labels at powers of ten on a CPU-like roofline whose axis starts between
// decades, and "evaluations" counting evaluations, not failed proposals.
func TestReportLayoutInChromium(t *testing.T) {
	bin, err := findChromium()
	toolchaintest.Require(t, err)
	run, nodes, _ := synthRun(12, 3)
	// The root is the best; two proposals failed (no evaluation).
	nodes[0].Fitness, nodes[0].SpeedupEager = 4.74, fp(4.74)
	for i := 1; i < len(nodes); i++ {
		if nodes[i].Verdict == "pass" && nodes[i].Fitness > 4 {
			nodes[i].Fitness = 2
		}
	}
	failed := 0
	for _, i := range []int{len(nodes) - 1, len(nodes) - 2} {
		nodes[i].Verdict, nodes[i].Timing, nodes[i].Checks, nodes[i].Fitness, nodes[i].EvalSeq = verdictFailed, nil, nil, 0, 0
		failed++
	}
	run.BestNodeID, run.BudgetEvals = nodes[0].ID, 3
	// A CPU's figures: 2.81 GB/s and 41 GFLOP/s bf16, an axis between decades.
	ceil := Ceilings{PeakFLOPS: map[string]float64{"bf16": 41e9}, MemBandwidth: 2.81e9, Dtype: "bf16", Source: "measured"}
	page := filepath.Join(outDir(t), "report-layout.html")
	if err := WriteFile(page, run, nodes, ceil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	// The probe is the test's, not the page's: the copy drops the page's
	// script policy (which allows only its own script) to run it.
	csp := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy"[^>]*>`)
	probe := strings.Replace(csp.ReplaceAllString(string(b), ""), "</body>", layoutProbe+"</body>", 1)
	if err := os.WriteFile(page, []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, stderr := runChromium(t, bin, "--dump-dom", "file://"+page)
	assertCleanLoad(t, dom, stderr, len(nodes))
	m := regexp.MustCompile(`data-layout="([^"]*)"`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the probe did not run; console:\n%s", strings.Join(consoleProblems(stderr), "\n"))
	}
	var got struct {
		RoofHits int      `json:"roofHits"`
		Ticks    []string `json:"ticks"`
		Clipped  []string `json:"clipped"`
		Evals    string   `json:"evals"`
		Debug    string   `json:"roofDebug"`
	}
	raw := strings.NewReplacer("&quot;", `"`, "&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(m[1])
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatalf("probe %s: %v", raw, err)
	}
	t.Logf("layout: %+v", got)
	if got.RoofHits != 0 {
		t.Errorf("the roof runs through its own label (%d points inside its box)", got.RoofHits)
	}
	decade := regexp.MustCompile(`^(0\.0*1|1|10|100)(\s?[kMGTP])?$`)
	for _, tk := range got.Ticks {
		if !decade.MatchString(strings.TrimSpace(tk)) {
			t.Errorf("roofline tick %q is not a power of ten", tk)
		}
	}
	if len(got.Ticks) < 4 {
		t.Errorf("only %d roofline ticks: %v", len(got.Ticks), got.Ticks)
	}
	if len(got.Clipped) > 0 {
		t.Errorf("tree labels outside the tree: %v", got.Clipped)
	}
	evals := len(nodes) - failed
	if !regexp.MustCompile(`evaluations\s*` + itoa(evals) + ` / 3\s*` + itoa(len(nodes)) + ` nodes, 2 failed proposals`).MatchString(got.Evals) {
		t.Errorf("evaluations card %q: want %d evaluations and the 2 failed proposals named", got.Evals, evals)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
