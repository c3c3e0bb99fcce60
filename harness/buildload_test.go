package harness

import (
	"strings"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// What an evaluation says of its builds' lost time: a kill in a build
// stage that lost more than it was granted is the host's (a harness error,
// no verdict), any other timeout stays the candidate's with the build's
// grant in its detail, and a result that needed a grant notes it.
func TestBuildLoadReporting(t *testing.T) {
	g := worker.BuildGrant{Wall: 90 * time.Second, Lost: 70 * time.Second, Granted: 50 * time.Second, Peers: 15}
	cases := []struct {
		name      string
		out       worker.Outcome
		err, note string
	}{
		{"host's timeout", worker.Outcome{TimedOut: true, BuildLoadTimeout: true, Stage: "load_candidate", Build: g}, "build_load_timeout", ""},
		{"candidate's timeout", worker.Outcome{TimedOut: true, Stage: "timing", Build: g}, "", ""},
		{"finished with a grant", worker.Outcome{Build: g}, "", "build_load: its build stages ran 90.0s"},
		{"finished without", worker.Outcome{}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := buildLoadTimeout(&evalRun{req: EvalRequest{Timeout: 60 * time.Second}}, &tc.out)
			if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			if err != nil && !strings.Contains(err.Error(), "15 other build(s) in flight") {
				t.Errorf("the error does not say why: %v", err)
			}
			res := &EvalResult{}
			if !tc.out.TimedOut { // a timeout's grant is in the deadline's detail
				addBuildGrant(res, &tc.out)
			}
			if got := strings.Join(res.Notes, "\n"); (tc.note == "") != (got == "") || !strings.Contains(got, tc.note) {
				t.Fatalf("notes %q, want %q", got, tc.note)
			}
			if tc.out.TimedOut && !tc.out.BuildLoadTimeout && !strings.Contains(buildGrant(tc.out.Build), "50.0s granted") {
				t.Errorf("the deadline's detail lacks the build grant: %q", buildGrant(tc.out.Build))
			}
		})
	}
}
