package fleet

// The fleet token never reaches the code a worker evaluates, and never is
// stored: the worker drops it from the environment its evaluation
// processes inherit, and both ends redact it from every reported result
// (the node's log, check details, errors) before it is sent or stored.

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"

	"github.com/kevolve/kevolve-mcp/search"
)

// tokenEnv is the variable launchers hand the token in.
const tokenEnv = "KEVOLVE_TOKEN"

// redacted replaces a secret in what is stored.
const redacted = "[redacted]"

// dropTokenEnv removes the token from this process's environment, which
// the evaluation service's Python processes are started with: candidate
// code that reads its environment (or prints it into a stored log) finds
// nothing. The worker keeps its own copy (WorkerOptions.Token).
func dropTokenEnv() { _ = os.Unsetenv(tokenEnv) }

// redactResult removes every occurrence of secret from a result report.
func redactResult(r *ResultRequest, secret string) {
	if secret == "" {
		return
	}
	r.Error = strings.ReplaceAll(r.Error, secret, redacted)
	if r.Result == nil {
		return
	}
	b, err := json.Marshal(r.Result)
	if err != nil {
		return
	}
	q, _ := json.Marshal(secret)
	esc := q[1 : len(q)-1] // the secret as it appears inside a JSON string
	if !bytes.Contains(b, esc) {
		return
	}
	var clean search.Result
	if json.Unmarshal(bytes.ReplaceAll(b, esc, []byte(redacted)), &clean) == nil {
		*r.Result = clean
	} else {
		r.Result = nil
		r.Error = "the result could not be stored without the fleet token in it"
	}
}
