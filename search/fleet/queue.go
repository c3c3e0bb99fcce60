package fleet

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/search"
)

// Queue is the fleet's jobs and workers in the search's SQLite file. Every
// method is one transaction, so the coordinator can be killed between any
// two calls and lose nothing.
type Queue struct {
	db *sql.DB
	// Lease is how long a claim lives without a heartbeat; MaxLost how many
	// workers' deaths a job may be blamed for before it is recorded as a
	// crash (see Reap).
	Lease   time.Duration
	MaxLost int
	// MaxErrors is how many times workers may fail to evaluate a job at all
	// (no Python, ...) before the job fails.
	MaxErrors int

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every state change
	now     func() time.Time
}

// NewQueue migrates the fleet tables in db.
func NewQueue(ctx context.Context, db *sql.DB) (*Queue, error) {
	if err := Migrate(ctx, db); err != nil {
		return nil, err
	}
	return &Queue{db: db, Lease: DefaultLease, MaxLost: DefaultMaxLost, MaxErrors: 3, changed: make(chan struct{}), now: time.Now}, nil
}

// DB is the queue's database.
func (q *Queue) DB() *sql.DB { return q.db }

func (q *Queue) unix() float64 { return float64(q.now().UnixNano()) / 1e9 }

// Changed returns a channel closed at the next state change in this
// process (other processes' changes are seen by polling).
func (q *Queue) Changed() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.changed
}

func (q *Queue) signal() {
	q.mu.Lock()
	close(q.changed)
	q.changed = make(chan struct{})
	q.mu.Unlock()
}

func randomID(prefix string) string {
	var b [8]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// JobKey identifies an evaluation: the same code on the same problem and
// kind is one job, whoever asks and however often (a resumed search
// waits for the job its killed predecessor enqueued).
func JobKey(p search.Problem, k Kind, reference, code string, skipTiming bool) string {
	h := sha256.New()
	// The contents, not names: a reference file edited under the same
	// path, or code that differs only where the search's normalization
	// looks away, is another job.
	ref, src := sha256.Sum256([]byte(reference)), sha256.Sum256([]byte(code))
	fmt.Fprintf(h, "%s\x00%s\x00%x\x00%x", p.Key(), k.String(), ref, src)
	if skipTiming { // an untimed result never answers for a timed one
		h.Write([]byte("\x00untimed"))
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// JobState is a job's life: queued → claimed → done (or failed); a lost
// lease takes claimed back to queued.
type JobState string

const (
	JobQueued  JobState = "queued"
	JobClaimed JobState = "claimed"
	JobDone    JobState = "done"
	JobFailed  JobState = "failed"
)

// JobRecord is a job as stored.
type JobRecord struct {
	ID          string
	Key         string
	Kind        Kind
	State       JobState
	WorkerID    string
	Device      int
	Claims      int
	Lost        int
	Errors      int
	Late        int
	Completions int
	Result      *search.Result
	Error       string
	DoneBy      string
	CreatedAt   time.Time
	FinishedAt  time.Time
}

// Enqueue adds the job for (problem, kind, code) unless one exists, and
// returns the job's id either way.
func (q *Queue) Enqueue(ctx context.Context, p search.Problem, k Kind, reference, code string, timeout time.Duration, skipTiming bool) (string, error) {
	key := JobKey(p, k, reference, code, skipTiming)
	kind, _ := json.Marshal(k)
	prob, _ := json.Marshal(p)
	id := randomID("j-")
	res, err := q.db.ExecContext(ctx, `INSERT OR IGNORE INTO fleet_jobs(id, job_key, problem_key, code_hash, kind, kind_label, problem, reference, code, timeout_s, skip_timing, state, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?)`, id, key, p.Key(), search.NormalizedHash(code), string(kind), k.String(), string(prob), reference, code, timeout.Seconds(), skipTiming, q.unix())
	if err != nil {
		return "", fmt.Errorf("enqueue: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		q.signal()
		return id, nil
	}
	err = q.db.QueryRowContext(ctx, `SELECT id FROM fleet_jobs WHERE job_key = ?`, key).Scan(&id)
	if err != nil {
		return "", fmt.Errorf("enqueue: existing job: %w", err)
	}
	return id, nil
}

// Job reads one job.
func (q *Queue) Job(ctx context.Context, id string) (*JobRecord, error) {
	rows, err := q.db.QueryContext(ctx, jobSelect+` WHERE id = ?`, id)
	if err != nil {
		return nil, err
	}
	js, err := scanJobs(rows)
	if err != nil {
		return nil, err
	}
	if len(js) == 0 {
		return nil, fmt.Errorf("job %s: %w", id, search.ErrNotFound)
	}
	return js[0], nil
}

// Jobs lists every job, oldest first.
func (q *Queue) Jobs(ctx context.Context) ([]*JobRecord, error) {
	rows, err := q.db.QueryContext(ctx, jobSelect+` ORDER BY created_at, id`)
	if err != nil {
		return nil, err
	}
	return scanJobs(rows)
}

// JobsFor lists the jobs of one code on one problem, one per kind.
func (q *Queue) JobsFor(ctx context.Context, problemKey, codeHash string) ([]*JobRecord, error) {
	rows, err := q.db.QueryContext(ctx, jobSelect+` WHERE problem_key = ? AND code_hash = ? ORDER BY created_at`, problemKey, codeHash)
	if err != nil {
		return nil, err
	}
	return scanJobs(rows)
}

const jobSelect = `SELECT id, job_key, kind, state, COALESCE(worker_id, ''), COALESCE(device, -1), claims, lost, errors, late_results, completions,
	COALESCE(result, ''), error, COALESCE(done_by, ''), created_at, COALESCE(finished_at, 0) FROM fleet_jobs`

func scanJobs(rows *sql.Rows) ([]*JobRecord, error) {
	defer rows.Close()
	var out []*JobRecord
	for rows.Next() {
		var j JobRecord
		var kind, res string
		var created, finished float64
		if err := rows.Scan(&j.ID, &j.Key, &kind, &j.State, &j.WorkerID, &j.Device, &j.Claims, &j.Lost, &j.Errors, &j.Late, &j.Completions,
			&res, &j.Error, &j.DoneBy, &created, &finished); err != nil {
			return nil, err
		}
		json.Unmarshal([]byte(kind), &j.Kind)
		if res != "" {
			j.Result = &search.Result{}
			if err := json.Unmarshal([]byte(res), j.Result); err != nil {
				return nil, fmt.Errorf("job %s: result: %w", j.ID, err)
			}
		}
		j.CreatedAt = fromUnix(created)
		if finished > 0 {
			j.FinishedAt = fromUnix(finished)
		}
		out = append(out, &j)
	}
	return out, rows.Err()
}

func fromUnix(s float64) time.Time { return time.Unix(0, int64(s*1e9)) }

// execer is what a transaction's statements run on.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// withTx runs f in one immediate transaction: the write lock is taken up
// front, so two processes claiming at once serialize instead of failing
// to upgrade a read lock, whatever DSN the database was opened with.
func (q *Queue) withTx(ctx context.Context, f func(tx execer) error) error {
	conn, err := q.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return err
	}
	if err := f(conn); err != nil {
		conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
		return err
	}
	if _, err := conn.ExecContext(context.WithoutCancel(ctx), `COMMIT`); err != nil {
		conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
		return err
	}
	return nil
}

func logJob(ctx context.Context, tx execer, at float64, jobID, workerID, what, detail string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO fleet_job_log(job_id, worker_id, what, detail, at) VALUES (?, ?, ?, ?, ?)`, jobID, workerID, what, detail, at)
	return err
}

// ErrUnknownWorker is returned for a worker that never registered here.
var ErrUnknownWorker = errors.New("unknown worker: register first")

// Register records (or refreshes) a worker and its devices.
func (q *Queue) Register(ctx context.Context, r RegisterRequest) error {
	devs, _ := json.Marshal(r.Devices)
	now := q.unix()
	_, err := q.db.ExecContext(ctx, `INSERT INTO fleet_workers(id, name, host, pid, version, devices, registered_at, last_seen, state)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'alive')
		ON CONFLICT(id) DO UPDATE SET name = excluded.name, host = excluded.host, pid = excluded.pid, version = excluded.version,
			devices = excluded.devices, last_seen = excluded.last_seen, state = 'alive'`,
		r.ID, r.Name, r.Host, r.PID, r.Version, string(devs), now, now)
	if err != nil {
		return fmt.Errorf("register worker %s: %w", r.ID, err)
	}
	return nil
}

// Deregister marks a worker gone (it exited cleanly).
func (q *Queue) Deregister(ctx context.Context, workerID string) error {
	_, err := q.db.ExecContext(ctx, `UPDATE fleet_workers SET state = 'gone', last_seen = ? WHERE id = ?`, q.unix(), workerID)
	return err
}

func (q *Queue) workerDevices(ctx context.Context, tx execer, workerID string) ([]Device, error) {
	var devs string
	err := tx.QueryRowContext(ctx, `SELECT devices FROM fleet_workers WHERE id = ?`, workerID).Scan(&devs)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrUnknownWorker
	}
	if err != nil {
		return nil, err
	}
	var out []Device
	return out, json.Unmarshal([]byte(devs), &out)
}

// Matches says whether a device can run a job of kind k: the same target,
// and the arch and model asked for (case-insensitive; the model as a
// substring of the device's name, or its arch).
func (k Kind) Matches(d Device) bool {
	if !strings.EqualFold(k.Target, d.Target) {
		return false
	}
	if k.Arch != "" && !strings.EqualFold(k.Arch, d.Arch) {
		return false
	}
	if k.Model != "" {
		m := strings.ToLower(k.Model)
		if !strings.Contains(strings.ToLower(d.Name), m) && !strings.EqualFold(d.Arch, m) {
			return false
		}
	}
	return true
}

// Claim atomically hands the worker up to one queued job per free job slot
// (a device index in free, as often as the device has room: never more
// than its Jobs), each matched on the device's target and arch: the
// costliest first by the stored costs of earlier evaluations
// (costliestFirst), the oldest first among equals.
func (q *Queue) Claim(ctx context.Context, workerID string, free []int) ([]Job, error) {
	var out []Job
	err := q.withTx(ctx, func(tx execer) error {
		out = nil
		devs, err := q.workerDevices(ctx, tx, workerID)
		if err != nil {
			return err
		}
		now := q.unix()
		// A long poll is answered by the coordinator, not the worker: hand
		// work only to a worker heard from recently (heartbeats come every
		// quarter of a lease), never to one frozen or cut off with a poll
		// still open.
		var seen float64
		if err := tx.QueryRowContext(ctx, `SELECT last_seen FROM fleet_workers WHERE id = ?`, workerID).Scan(&seen); err != nil {
			return err
		}
		if now-seen > 0.75*q.Lease.Seconds() {
			return nil
		}
		byIndex := map[int]Device{}
		for _, d := range devs {
			byIndex[d.Index] = d
		}
		// room: the jobs each offered device may still take.
		room, slots := map[int]int{}, 0
		for _, idx := range free {
			if d, ok := byIndex[idx]; ok && room[idx] < d.jobs() {
				room[idx]++
				slots++
			}
		}
		if slots == 0 {
			return nil
		}
		queued, err := queuedJobs(ctx, tx)
		if err != nil {
			return err
		}
		runnable := func(k Kind) bool {
			for idx := range room {
				if k.Matches(byIndex[idx]) {
					return true
				}
			}
			return false
		}
		taken := 0
		for _, c := range costliestFirst(ctx, tx, queued, runnable) {
			if taken == slots {
				break
			}
			// The device with the most room first: jobs spread over the
			// worker's devices before they stack on one.
			dev := -1
			for _, idx := range free {
				if d := byIndex[idx]; room[idx] > 0 && c.Kind.Matches(d) && (dev < 0 || room[idx] > room[dev]) {
					dev = idx
				}
			}
			if dev < 0 {
				continue
			}
			j := c
			j.Device, j.LeaseToken, j.Attempt = dev, randomID("l-"), j.Attempt+1
			res, err := tx.ExecContext(ctx, `UPDATE fleet_jobs SET state = 'claimed', worker_id = ?, device = ?, lease_token = ?, lease_expires = ?, claims = claims + 1
				WHERE id = ? AND state = 'queued'`, workerID, dev, j.LeaseToken, now+q.Lease.Seconds(), j.ID)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n != 1 {
				continue
			}
			if err := logJob(ctx, tx, now, j.ID, workerID, "claimed", fmt.Sprintf("device %d, attempt %d", dev, j.Attempt)); err != nil {
				return err
			}
			room[dev]--
			taken++
			out = append(out, j)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	if len(out) > 0 {
		q.signal()
	}
	return out, nil
}

// queuedJobs reads the oldest queued jobs (Attempt: their claims so far).
func queuedJobs(ctx context.Context, tx execer) ([]Job, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, kind, problem, reference, code, timeout_s, skip_timing, claims FROM fleet_jobs WHERE state = 'queued' ORDER BY created_at, id LIMIT 500`)
	if err != nil {
		return nil, fmt.Errorf("queued jobs: %w", err)
	}
	defer rows.Close()
	var out []Job
	for rows.Next() {
		var j Job
		var kind, prob string
		if err := rows.Scan(&j.ID, &kind, &prob, &j.Reference, &j.Code, &j.TimeoutS, &j.SkipTiming, &j.Attempt); err != nil {
			return nil, fmt.Errorf("queued jobs: %w", err)
		}
		json.Unmarshal([]byte(kind), &j.Kind)
		json.Unmarshal([]byte(prob), &j.Problem)
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("queued jobs: %w", err)
	}
	return out, nil
}

// costliestFirst orders the jobs a worker could run (runnable) by
// harness.OrderCost, the rule kernelbench run and suites use: the build and
// device seconds the harness stored for the job's reference, code and
// target (the problem's target is the kind's: Evaluator.Evaluate sets it),
// whether a harness Evaluator on this database or Complete (recordCost: a
// worker's result) stored them, else the code's words; oldest first among
// equals. A job holds its whole key when it is queued, so no stand-in is
// needed. Jobs the worker cannot run are left out (they are not looked
// up); only the oldest queued jobs queuedJobs read are ordered, so a long
// queue still drains oldest first.
//
// The costs are read inside the claim's transaction (tx): a database
// limited to one connection must not wait on itself. A database without
// eval_cost (no harness Evaluator ever opened it) ranks by words alone.
func costliestFirst(ctx context.Context, tx harness.RowQuerier, jobs []Job, runnable func(Kind) bool) []Job {
	var cands []Job
	for _, j := range jobs {
		if runnable(j.Kind) {
			cands = append(cands, j)
		}
	}
	cr := storedCosts{tx}
	cost := make([]float64, len(cands))
	for i, j := range cands {
		cost[i] = harness.OrderCost(ctx, cr, j.Reference, j.Code, j.Problem.Target)
	}
	out := make([]Job, len(cands))
	for i, k := range harness.CostliestFirst(cost) {
		out[i] = cands[k]
	}
	return out
}

// storedCosts reads eval_cost on a database, connection or transaction.
type storedCosts struct{ db harness.RowQuerier }

func (s storedCosts) StoredCost(ctx context.Context, refCode, candCode, target string) (harness.Cost, bool) {
	return harness.LookupCost(ctx, s.db, refCode, candCode, target)
}

// Touch records that the worker was heard from.
func (q *Queue) Touch(ctx context.Context, workerID string) error {
	res, err := q.db.ExecContext(ctx, `UPDATE fleet_workers SET last_seen = ?, state = 'alive' WHERE id = ?`, q.unix(), workerID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrUnknownWorker
	}
	return nil
}

// Heartbeat renews the worker's leases and returns the jobs it no longer
// holds.
func (q *Queue) Heartbeat(ctx context.Context, workerID string, held []JobLease) ([]string, error) {
	var lost []string
	err := q.withTx(ctx, func(tx execer) error {
		lost = nil
		now := q.unix()
		res, err := tx.ExecContext(ctx, `UPDATE fleet_workers SET last_seen = ?, state = 'alive' WHERE id = ?`, now, workerID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrUnknownWorker
		}
		for _, h := range held {
			res, err := tx.ExecContext(ctx, `UPDATE fleet_jobs SET lease_expires = ? WHERE id = ? AND state = 'claimed' AND lease_token = ? AND worker_id = ?`,
				now+q.Lease.Seconds(), h.JobID, h.LeaseToken, workerID)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				lost = append(lost, h.JobID)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("heartbeat: %w", err)
	}
	return lost, nil
}

// Complete records a job's result. Only the current lease holder's (or, if
// the job was requeued and not yet claimed again, the last holder's)
// report is recorded; once a job is done every later report is ignored,
// so results are idempotent by job id, and a rejected report changes
// nothing but the job's count of them. A report with Error puts the job
// back in the queue (up to MaxErrors times, then the job fails). An
// accepted result keeps its evaluation's cost for later claims
// (recordCost).
func (q *Queue) Complete(ctx context.Context, r ResultRequest) (ResultResponse, error) {
	var resp ResultResponse
	err := q.withTx(ctx, func(tx execer) error {
		now := q.unix()
		var state, token, holder string
		var errs int
		err := tx.QueryRowContext(ctx, `SELECT state, lease_token, COALESCE(worker_id, ''), errors FROM fleet_jobs WHERE id = ?`, r.JobID).Scan(&state, &token, &holder, &errs)
		if errors.Is(err, sql.ErrNoRows) {
			resp = ResultResponse{Why: "unknown job"}
			return nil
		}
		if err != nil {
			return err
		}
		switch {
		case JobState(state) == JobDone || JobState(state) == JobFailed:
			resp = ResultResponse{Why: "already finished: a late duplicate, ignored"}
		case token != r.LeaseToken:
			resp = ResultResponse{Why: "lease lost: the job was given to another worker"}
		case JobState(state) == JobClaimed && holder != r.WorkerID:
			resp = ResultResponse{Why: "lease held by another worker"}
		}
		if resp.Why != "" {
			// A rejected report changes nothing it names: not the worker's
			// row (busy_s, last_seen), not the event log; whoever sent it
			// (a late duplicate, or a forger with a guessed job id) only
			// adds to the job's count of ignored reports.
			_, err := tx.ExecContext(ctx, `UPDATE fleet_jobs SET late_results = late_results + 1 WHERE id = ?`, r.JobID)
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE fleet_workers SET last_seen = ?, busy_s = busy_s + ? WHERE id = ?`, now, max(r.BusyS, 0), r.WorkerID); err != nil {
			return err
		}
		if r.Result == nil {
			msg := r.Error
			if msg == "" {
				msg = "the worker reported neither a result nor an error"
			}
			if errs+1 >= q.MaxErrors {
				if _, err := tx.ExecContext(ctx, `UPDATE fleet_jobs SET state = 'failed', errors = errors + 1, error = ?, done_by = ?, finished_at = ? WHERE id = ?`,
					msg, r.WorkerID, now, r.JobID); err != nil {
					return err
				}
				resp = ResultResponse{Accepted: true, Why: "failed"}
				return logJob(ctx, tx, now, r.JobID, r.WorkerID, "failed", msg)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE fleet_jobs SET state = 'queued', worker_id = NULL, errors = errors + 1, error = ? WHERE id = ?`, msg, r.JobID); err != nil {
				return err
			}
			resp = ResultResponse{Accepted: true, Why: "requeued after a worker error"}
			return logJob(ctx, tx, now, r.JobID, r.WorkerID, "requeued", "worker error: "+msg)
		}
		res, _ := json.Marshal(r.Result)
		if _, err := tx.ExecContext(ctx, `UPDATE fleet_jobs SET state = 'done', result = ?, verdict = ?, done_by = ?, worker_id = ?, finished_at = ?, completions = completions + 1, busy_s = ? WHERE id = ?`,
			string(res), r.Result.Verdict, r.WorkerID, r.WorkerID, now, max(r.BusyS, 0), r.JobID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE fleet_workers SET jobs_done = jobs_done + 1 WHERE id = ?`, r.WorkerID); err != nil {
			return err
		}
		recordCost(ctx, tx, r.JobID, r.Result)
		resp = ResultResponse{Accepted: true}
		return logJob(ctx, tx, now, r.JobID, r.WorkerID, "done", r.Result.Verdict)
	})
	if err != nil {
		return resp, fmt.Errorf("result of %s: %w", r.JobID, err)
	}
	if resp.Accepted {
		q.signal()
	}
	return resp, nil
}

// recordCost keeps what an accepted result's evaluation took in the
// harness's eval_cost, so later claims of the same reference, code and
// target start it in its place (costliestFirst): workers evaluate without a
// database, so the coordinator is the only one that can keep the fleet's
// own costs. The cost is harness.CostOf of the harness result the worker
// sent whole (Result.Raw), the rule the harness applies to its own
// evaluations, written by harness.RecordCost under the key Claim looks up:
// the job's reference and code, and its problem's target (where that is
// "" or "auto", which Claim matches on any target, the target the
// evaluation ran on, as the harness keys its own rows).
//
// A result that carries no harness result, or one that does not read as
// one (no verdict, a negative second), keeps nothing, nor does a cached
// answer. Written in Complete's transaction, and best effort: a cost only
// orders work, so it never refuses a result, and a database without
// eval_cost (no harness Evaluator ever opened it) keeps none.
func recordCost(ctx context.Context, tx execer, jobID string, res *search.Result) {
	c, ranOn, ok := resultCost(res)
	if !ok {
		return
	}
	var ref, code, prob string
	if err := tx.QueryRowContext(ctx, `SELECT reference, code, problem FROM fleet_jobs WHERE id = ?`, jobID).Scan(&ref, &code, &prob); err != nil {
		return
	}
	var p search.Problem
	json.Unmarshal([]byte(prob), &p) // as queuedJobs reads it for Claim
	target := p.Target
	if (target == "" || target == "auto") && ranOn != "" {
		target = ranOn
	}
	harness.RecordCost(ctx, tx, ref, code, target, c)
}

// resultCost is the cost of the evaluation behind res and the target it
// ran on; ok is false where res carries none to keep (see recordCost).
func resultCost(res *search.Result) (c harness.Cost, target string, ok bool) {
	if res == nil || len(res.Raw) == 0 {
		return harness.Cost{}, "", false
	}
	var hr harness.EvalResult
	if err := json.Unmarshal(res.Raw, &hr); err != nil || hr.Verdict == "" {
		return harness.Cost{}, "", false
	}
	c, ok = harness.CostOf(&hr)
	if !ok || !(c.BuildS >= 0 && c.DeviceS >= 0 && c.WallS >= 0) {
		return harness.Cost{}, "", false
	}
	return c, hr.Target, true
}

// Release gives claimed jobs back to the queue without counting a lost
// lease (a worker draining on SIGTERM).
func (q *Queue) Release(ctx context.Context, workerID string, held []JobLease, reason string) error {
	err := q.withTx(ctx, func(tx execer) error {
		now := q.unix()
		for _, h := range held {
			res, err := tx.ExecContext(ctx, `UPDATE fleet_jobs SET state = 'queued', worker_id = NULL WHERE id = ? AND state = 'claimed' AND lease_token = ? AND worker_id = ?`,
				h.JobID, h.LeaseToken, workerID)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 1 {
				if err := logJob(ctx, tx, now, h.JobID, workerID, "released", reason); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	q.signal()
	return nil
}

// Reap requeues the jobs whose lease expired, and records as a crash each
// job blamed for MaxLost workers' deaths. It returns how many leases it
// found expired.
//
// Blame: a worker whose leases expire died, hung or was cut off with k
// jobs in flight (up to six per GPU); at most one of them can have caused
// it, so each takes 1/k. A job lost twice alone is a crash, as is one lost
// MaxLost+lostCapExtra times in any company; an evaluation that merely
// shared two dying workers with others is retried.
func (q *Queue) Reap(ctx context.Context) (int, error) {
	n := 0
	err := q.withTx(ctx, func(tx execer) error {
		n = 0
		now := q.unix()
		// held: the worker's jobs in flight when it was last heard from,
		// those still claimed and those an earlier Reap took back since
		// (leases claimed between heartbeats expire a little later).
		rows, err := tx.QueryContext(ctx, `SELECT j.id, COALESCE(j.worker_id, ''), j.lost, j.blame,
			(SELECT COUNT(*) FROM fleet_jobs o WHERE o.state = 'claimed' AND o.worker_id = j.worker_id) +
			(SELECT COUNT(*) FROM fleet_job_log l WHERE l.worker_id = j.worker_id AND l.what = 'lease_lost'
				AND l.at >= COALESCE((SELECT last_seen FROM fleet_workers w WHERE w.id = j.worker_id), 0)),
			COALESCE((SELECT last_seen FROM fleet_workers w WHERE w.id = j.worker_id), 0)
			FROM fleet_jobs j WHERE j.state = 'claimed' AND j.lease_expires < ?`, now)
		if err != nil {
			return err
		}
		type exp struct {
			id, worker string
			lost       int
			blame      float64
			held       int     // the worker's jobs in flight, this one included
			seen       float64 // when the worker was last heard from
		}
		var es []exp
		for rows.Next() {
			var e exp
			if err := rows.Scan(&e.id, &e.worker, &e.lost, &e.blame, &e.held, &e.seen); err != nil {
				rows.Close()
				return err
			}
			es = append(es, e)
		}
		rows.Close()
		for _, e := range es {
			share := 1 / float64(max(e.held, 1))
			n++
			if _, err := tx.ExecContext(ctx, `UPDATE fleet_workers SET leases_lost = leases_lost + 1 WHERE id = ?`, e.worker); err != nil {
				return err
			}
			// How long the worker was silent tells a dead or stopped worker
			// (a lease or more) from a live one that did not renew this lease.
			if err := logJob(ctx, tx, now, e.id, e.worker, "lease_lost", fmt.Sprintf("worker last heard from %.2f s before", now-e.seen)); err != nil {
				return err
			}
			// A small tolerance: three shares of 1/3 make one death.
			if e.blame+share >= float64(q.MaxLost)-1e-9 || e.lost+1 >= q.MaxLost+lostCapExtra {
				why := fmt.Sprintf("the job lost %d worker leases (each worker died, hung or was cut off while running it; its share of the blame: %.2f workers): recorded as a crash, not retried", e.lost+1, e.blame+share)
				res, _ := json.Marshal(&search.Result{Verdict: search.VerdictCrash, Stage: "fleet", Log: why,
					Checks: []search.Check{{Name: "fleet_lease", Passed: false, Detail: why}}})
				if _, err := tx.ExecContext(ctx, `UPDATE fleet_jobs SET state = 'done', lost = lost + 1, blame = blame + ?, result = ?, verdict = 'crash', error = ?, done_by = 'coordinator', worker_id = NULL, finished_at = ?, completions = completions + 1 WHERE id = ?`,
					share, string(res), why, now, e.id); err != nil {
					return err
				}
				if err := logJob(ctx, tx, now, e.id, e.worker, "crashed", why); err != nil {
					return err
				}
				continue
			}
			if _, err := tx.ExecContext(ctx, `UPDATE fleet_jobs SET state = 'queued', lost = lost + 1, blame = blame + ?, worker_id = NULL WHERE id = ?`, share, e.id); err != nil {
				return err
			}
			if err := logJob(ctx, tx, now, e.id, e.worker, "requeued", fmt.Sprintf("lease expired with %d jobs on the worker", e.held)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("reap: %w", err)
	}
	if n > 0 {
		q.signal()
	}
	return n, nil
}

// Grace extends every live lease by one lease length from now: a
// coordinator that was down must not count its own downtime against the
// workers that kept evaluating.
func (q *Queue) Grace(ctx context.Context) error {
	_, err := q.db.ExecContext(ctx, `UPDATE fleet_jobs SET lease_expires = ? WHERE state = 'claimed'`, q.unix()+q.Lease.Seconds())
	return err
}

// LogEntry is one line of the job log.
type LogEntry struct {
	JobID, WorkerID, What, Detail string
	At                            time.Time
}

// Log returns the job log in order.
func (q *Queue) Log(ctx context.Context) ([]LogEntry, error) {
	rows, err := q.db.QueryContext(ctx, `SELECT job_id, worker_id, what, detail, at FROM fleet_job_log ORDER BY seq`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []LogEntry
	for rows.Next() {
		var e LogEntry
		var at float64
		if err := rows.Scan(&e.JobID, &e.WorkerID, &e.What, &e.Detail, &at); err != nil {
			return nil, err
		}
		e.At = fromUnix(at)
		out = append(out, e)
	}
	return out, rows.Err()
}
