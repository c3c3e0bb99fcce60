package fleet

import (
	"encoding/json"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
)

// API paths the coordinator serves (all POST with a JSON body, plus GET
// status).
const (
	PathRegister  = "/fleet/v1/register"
	PathClaim     = "/fleet/v1/claim"
	PathHeartbeat = "/fleet/v1/heartbeat"
	PathResult    = "/fleet/v1/result"
	PathRelease   = "/fleet/v1/release"
	PathStatus    = "/fleet/v1/status"
)

// Device is one device a worker offers, and how many jobs it takes at once.
type Device struct {
	// Index is the device's index on its host (the lease the job runs on).
	Index int `json:"index"`
	// Jobs is how many jobs the worker runs on the device at once (0 = 1):
	// a GPU takes as many as the host's lease pool places on one device.
	Jobs int `json:"jobs,omitempty"`
	// Target is the harness target ("cpu", "nvidia", "amd"); Arch its arch
	// ("sm_90", "gfx942", "x86_64"); Name the product ("NVIDIA H100 80GB HBM3").
	Target string `json:"target"`
	Arch   string `json:"arch,omitempty"`
	Name   string `json:"name,omitempty"`
	UUID   string `json:"uuid,omitempty"`
	// Ceilings are the measured or spec roofline figures, as the harness
	// reports them (informational; a JSON object, so that evolve_status's
	// output schema says what it holds).
	Ceilings map[string]any `json:"ceilings,omitempty"`
}

// jsonObject is v as a JSON object (nil if it is not one).
func jsonObject(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

// jobs is how many jobs the device takes at once.
func (d Device) jobs() int { return max(d.Jobs, 1) }

// Kind is a device kind a job asks for: a target and, optionally, an arch
// or a product name (matched case-insensitively as a substring, so "h100"
// matches "NVIDIA H100 80GB HBM3").
type Kind struct {
	Target string `json:"target"`
	Arch   string `json:"arch,omitempty"`
	Model  string `json:"model,omitempty"`
}

// String is the kind as the --targets flag spells it.
func (k Kind) String() string {
	s := k.Target
	if k.Arch != "" {
		s += ":" + k.Arch
	}
	if k.Model != "" {
		s += ":" + k.Model
	}
	return s
}

// RegisterRequest announces a worker and its devices. ID is stable across
// the worker's reconnects (a restarted coordinator recognizes it).
type RegisterRequest struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Host    string   `json:"host"`
	PID     int      `json:"pid"`
	Version string   `json:"version,omitempty"`
	Devices []Device `json:"devices"`
}

// RegisterResponse tells the worker the lease length to heartbeat within.
type RegisterResponse struct {
	LeaseS float64 `json:"lease_s"`
}

// ClaimRequest asks for up to len(Free) jobs, one per free job slot.
type ClaimRequest struct {
	WorkerID string `json:"worker_id"`
	// Free lists the worker's free job slots: a device's index once per
	// job it can still take (at most its Jobs).
	Free []int `json:"free"`
	// WaitS is how long the coordinator may hold the request open while
	// no job is queued (long poll).
	WaitS float64 `json:"wait_s,omitempty"`
}

// Job is one evaluation: a candidate against a reference on one kind.
type Job struct {
	ID        string         `json:"id"`
	Kind      Kind           `json:"kind"`
	Problem   search.Problem `json:"problem"`
	Reference string         `json:"reference"` // the reference program's source
	Code      string         `json:"code"`
	// LeaseToken proves the claim: heartbeats, results and releases carry it.
	LeaseToken string `json:"lease_token"`
	// Device is the worker's device index the job was claimed for.
	Device  int `json:"device"`
	Attempt int `json:"attempt"`
	// TimeoutS bounds the evaluation on the worker (0 = the harness default).
	TimeoutS float64 `json:"timeout_s,omitempty"`
	// SkipTiming asks for correctness and integrity checks only.
	SkipTiming bool `json:"skip_timing,omitempty"`
}

// ClaimResponse carries the claimed jobs (possibly none).
type ClaimResponse struct {
	Jobs []Job `json:"jobs"`
}

// JobLease names one held job.
type JobLease struct {
	JobID      string `json:"job_id"`
	LeaseToken string `json:"lease_token"`
}

// HeartbeatRequest renews the leases of every job the worker holds.
type HeartbeatRequest struct {
	WorkerID string     `json:"worker_id"`
	Jobs     []JobLease `json:"jobs"`
}

// HeartbeatResponse lists the held jobs whose lease is no longer the
// worker's (expired and requeued, or finished by someone else): the worker
// abandons them.
type HeartbeatResponse struct {
	Lost []string `json:"lost,omitempty"`
}

// ResultRequest reports a finished job. Error is set when the worker could
// not evaluate at all (the job is then released for another worker).
type ResultRequest struct {
	WorkerID   string         `json:"worker_id"`
	JobID      string         `json:"job_id"`
	LeaseToken string         `json:"lease_token"`
	Result     *search.Result `json:"result,omitempty"`
	Error      string         `json:"error,omitempty"`
	BusyS      float64        `json:"busy_s"`
}

// ResultResponse says whether this report was the one recorded.
type ResultResponse struct {
	Accepted bool   `json:"accepted"`
	Why      string `json:"why,omitempty"`
}

// ReleaseRequest gives jobs back unfinished (a worker draining on SIGTERM).
type ReleaseRequest struct {
	WorkerID string     `json:"worker_id"`
	Jobs     []JobLease `json:"jobs"`
	Reason   string     `json:"reason,omitempty"`
}

// Defaults for the protocol's timings.
const (
	DefaultLease     = 15 * time.Second
	DefaultClaimWait = 10 * time.Second
	// DefaultMaxLost is how many workers a job may take down before it is
	// recorded as a crash ("a job that kills two workers"): a lost lease
	// puts the worker's death on the jobs it held then, 1/k each of k.
	DefaultMaxLost = 2
	// lostCapExtra: a job whose leases were lost this many times more than
	// MaxLost is a crash whatever its share, so one that kills workers
	// while they are busy with others is not retried without end.
	lostCapExtra = 3
	// MaxBody bounds every request body (a result carries the harness's
	// whole result, logs trimmed; 8 MiB is far above any real one).
	MaxBody = 8 << 20
)
