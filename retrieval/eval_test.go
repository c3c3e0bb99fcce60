package retrieval

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// labeled is one query of testdata/queries.yaml with the documents that
// must come back for it.
type labeled struct {
	Q           string   `yaml:"q"`
	Device      string   `yaml:"device"`
	Operator    string   `yaml:"operator"`
	Language    string   `yaml:"language"`
	Bottlenecks []string `yaml:"bottlenecks"`
	Diagnosis   string   `yaml:"diagnosis"`
	Error       string   `yaml:"error"`
	Want        []string `yaml:"want"`
}

func (l labeled) query(k int) Query {
	return Query{Text: l.Q, Device: l.Device, Operator: l.Operator, Language: l.Language,
		Bottlenecks: l.Bottlenecks, Diagnosis: l.Diagnosis, ErrorText: l.Error, K: k}
}

func loadLabeled(t testing.TB) []labeled {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "queries.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var qs []labeled
	if err := yaml.Unmarshal(b, &qs); err != nil {
		t.Fatalf("queries.yaml: %v", err)
	}
	return qs
}

// evalResult is the quality of the index on the labeled set.
type evalResult struct {
	Recall5, MRR float64
	Misses       []string
}

// evaluate runs every labeled query: recall@5 is the mean share of wanted
// documents in the top 5 (for an operator context the constraints list
// counts too: it is returned whole); MRR uses the rank of the first wanted
// document in the results.
func evaluate(t testing.TB, ix *Index, qs []labeled) evalResult {
	t.Helper()
	var r evalResult
	for i, l := range qs {
		resp, err := ix.Search(context.Background(), l.query(5))
		if err != nil {
			t.Fatalf("query %d %q: %v", i, l.Q, err)
		}
		got := paths(resp.Results)
		found := 0
		for _, w := range l.Want {
			if slices.Contains(got, w) || slices.Contains(paths(resp.Constraints), w) {
				found++
			}
		}
		r.Recall5 += float64(found) / float64(len(l.Want))
		for rank, p := range got {
			if slices.Contains(l.Want, p) {
				r.MRR += 1 / float64(rank+1)
				break
			}
		}
		if found < len(l.Want) {
			r.Misses = append(r.Misses, fmt.Sprintf("%q dev=%s: want %v, got %v", l.Q+l.Diagnosis+l.Error, l.Device, l.Want, got))
		}
	}
	r.Recall5 /= float64(len(qs))
	r.MRR /= float64(len(qs))
	return r
}

// TestLabeledQueries is the acceptance figure: recall@5 >= 0.9 on the
// labeled set, whose wanted paths must all exist.
func TestLabeledQueries(t *testing.T) {
	ix := openBuiltin(t)
	qs := loadLabeled(t)
	if len(qs) < 60 {
		t.Errorf("only %d labeled queries; want at least 60", len(qs))
	}
	for _, l := range qs {
		if len(l.Want) == 0 {
			t.Errorf("query %q has no wanted documents", l.Q)
		}
		for _, w := range l.Want {
			if _, ok := ix.Get(w); !ok {
				t.Errorf("query %q wants %s, which is not in the knowledge base", l.Q, w)
			}
		}
	}
	r := evaluate(t, ix, qs)
	for _, m := range r.Misses {
		t.Log("miss: " + m)
	}
	t.Logf("%d queries over %d documents: recall@5 %.3f, MRR %.3f", len(qs), len(ix.List()), r.Recall5, r.MRR)
	if r.Recall5 < 0.9 {
		t.Errorf("recall@5 %.3f < 0.9", r.Recall5)
	}
}

// scopeDevices are the devices the hierarchy must handle.
var scopeDevices = []string{"h100", "h200", "a100", "b200", "mi300x", "mi325x", "mi355x", "cpu", "nvidia", "amd"}

// TestScopeNeverInverted runs every labeled query for every device (and as
// written, where the device may be in the text) and checks that no other
// vendor's or arch's document ever ranks above a generic one, and that the
// scope labels agree with the documents' front matter.
func TestScopeNeverInverted(t *testing.T) {
	ix := openBuiltin(t)
	ctx := context.Background()
	for _, l := range loadLabeled(t) {
		for _, dev := range append([]string{l.Device}, scopeDevices...) {
			q := l.query(20)
			q.Device = dev
			resp, err := ix.Search(ctx, q)
			if err != nil {
				t.Fatalf("%q on %s: %v", l.Q, dev, err)
			}
			if resp.Device == nil {
				continue
			}
			lastGeneric, firstOther := -1, len(resp.Results)
			for i, r := range resp.Results {
				d, _ := ix.Get(r.Path)
				if r.Vendor == "generic" {
					lastGeneric = i
				}
				other := d.Vendor != "generic" && (d.Vendor != resp.Device.Vendor ||
					(resp.Device.Arch != "" && d.Arch != "generic" && d.Arch != resp.Device.Arch))
				if other != (r.Scope == "other") {
					t.Errorf("%s on %s: scope %q for a %s/%s document", r.Path, dev, r.Scope, d.Vendor, d.Arch)
				}
				if other && i < firstOther {
					firstOther = i
				}
			}
			if firstOther < lastGeneric {
				t.Errorf("%q on %s: %s (other hardware) ranked above generic %s",
					l.Q, dev, resp.Results[firstOther].Path, resp.Results[lastGeneric].Path)
			}
		}
	}
}

// BenchmarkRetrieval reports the acceptance figures: recall@5 and MRR on
// the labeled set, the cold build time of the whole knowledge base into a
// fresh SQLite file, and the latency of one Search.
func BenchmarkRetrieval(b *testing.B) {
	qs := loadLabeled(b)
	ctx := context.Background()
	// Cold builds: a fresh database file each time.
	var builds []time.Duration
	var ix *Index
	for i := range 5 {
		db, err := sql.Open("sqlite3", "file:"+filepath.Join(b.TempDir(), fmt.Sprintf("kb%d.db", i))+"?_journal_mode=WAL")
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		ix, err = Open(ctx, db, nil)
		if err != nil {
			b.Fatal(err)
		}
		builds = append(builds, time.Since(start))
		defer db.Close()
	}
	sort.Slice(builds, func(i, j int) bool { return builds[i] < builds[j] })
	// A restart: same file, nothing changed, every document skipped.
	start := time.Now()
	if _, err := Open(ctx, ix.db, nil); err != nil {
		b.Fatal(err)
	}
	reopen := time.Since(start)
	r := evaluate(b, ix, qs)

	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := ix.Search(ctx, qs[i%len(qs)].query(5)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	var lat []time.Duration
	for range 3 {
		for _, l := range qs {
			start := time.Now()
			ix.Search(ctx, l.query(5))
			lat = append(lat, time.Since(start))
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(r.Recall5, "recall@5")
	b.ReportMetric(r.MRR, "MRR")
	b.ReportMetric(float64(builds[len(builds)/2].Microseconds())/1000, "cold-build-ms")
	b.ReportMetric(float64(reopen.Microseconds())/1000, "reopen-ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "search-p95-ms")
	b.ReportMetric(float64(len(ix.List())), "docs")
	b.ReportMetric(float64(ix.Stats().Passages), "passages")
	if len(r.Misses) > 0 {
		b.Logf("misses:\n%s", strings.Join(r.Misses, "\n"))
	}
}
