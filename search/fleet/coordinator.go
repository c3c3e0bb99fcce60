package fleet

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
)

// Coordinator serves the queue to workers over HTTP.
type Coordinator struct {
	Queue *Queue
	// Token is the bearer token workers must send; empty allows only a
	// loopback listener (see Listen).
	Token string
	Log   *slog.Logger
	// ClaimWait bounds a claim's long poll (default DefaultClaimWait).
	ClaimWait time.Duration

	srv *http.Server
	ln  net.Listener
}

func (c *Coordinator) log() *slog.Logger {
	if c.Log == nil {
		return slog.Default()
	}
	return c.Log
}

// ErrNeedToken refuses a non-loopback listen address without a token.
var ErrNeedToken = errors.New("the coordinator listens beyond loopback only with a token: give --token (or KEVOLVE_TOKEN)")

// IsLoopback says whether a listen address binds to loopback only.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Listen binds addr (loopback unless a token is set), gives every live
// lease a grace period (this may be a restart), starts the reaper and
// serves until ctx ends. It returns once the listener is bound; Addr is
// then the bound address.
func (c *Coordinator) Listen(ctx context.Context, addr string) error {
	if c.Token == "" && !IsLoopback(addr) {
		return fmt.Errorf("listen %s: %w", addr, ErrNeedToken)
	}
	if err := c.Queue.Grace(ctx); err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	c.ln = ln
	c.srv = &http.Server{Handler: c.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 60 * time.Second,
		WriteTimeout: c.claimWait() + 30*time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := c.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			c.log().Error("coordinator stopped serving", "err", err)
		}
	}()
	go c.reapLoop(ctx)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		c.srv.Shutdown(sctx)
	}()
	c.log().Info("fleet coordinator listening", "addr", ln.Addr().String(), "lease", c.Queue.Lease)
	return nil
}

// Addr is the bound address (after Listen).
func (c *Coordinator) Addr() string {
	if c.ln == nil {
		return ""
	}
	return c.ln.Addr().String()
}

// URL is the address workers on this host can reach.
func (c *Coordinator) URL() string { return "http://" + c.Addr() }

func (c *Coordinator) claimWait() time.Duration {
	if c.ClaimWait > 0 {
		return c.ClaimWait
	}
	return DefaultClaimWait
}

func (c *Coordinator) reapLoop(ctx context.Context) {
	tick := time.NewTicker(max(c.Queue.Lease/4, 100*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if n, err := c.Queue.Reap(ctx); err != nil && ctx.Err() == nil {
				c.log().Warn("fleet reaper", "err", err)
			} else if n > 0 {
				c.log().Info("fleet: leases expired, jobs requeued", "n", n)
			}
		}
	}
}

// Handler is the coordinator's HTTP API.
func (c *Coordinator) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathRegister, handle(c, func(ctx context.Context, r *RegisterRequest) (any, error) {
		if r.ID == "" || len(r.Devices) == 0 {
			return nil, badRequest("register: a worker needs an id and at least one device")
		}
		if err := c.Queue.Register(ctx, *r); err != nil {
			return nil, err
		}
		c.log().Info("fleet worker registered", "worker", r.Name, "host", r.Host, "devices", len(r.Devices))
		return RegisterResponse{LeaseS: c.Queue.Lease.Seconds()}, nil
	}))
	mux.HandleFunc("POST "+PathClaim, handle(c, func(ctx context.Context, r *ClaimRequest) (any, error) {
		return c.claim(ctx, r)
	}))
	mux.HandleFunc("POST "+PathHeartbeat, handle(c, func(ctx context.Context, r *HeartbeatRequest) (any, error) {
		lost, err := c.Queue.Heartbeat(ctx, r.WorkerID, r.Jobs)
		return HeartbeatResponse{Lost: lost}, err
	}))
	mux.HandleFunc("POST "+PathResult, handle(c, func(ctx context.Context, r *ResultRequest) (any, error) {
		redactResult(r, c.Token) // nothing stored holds the token (secrets.go)
		return c.Queue.Complete(ctx, *r)
	}))
	mux.HandleFunc("POST "+PathRelease, handle(c, func(ctx context.Context, r *ReleaseRequest) (any, error) {
		if err := c.Queue.Release(ctx, r.WorkerID, r.Jobs, r.Reason); err != nil {
			return nil, err
		}
		if r.Reason == "exit" {
			c.Queue.Deregister(ctx, r.WorkerID)
		}
		return struct{}{}, nil
	}))
	mux.HandleFunc("GET "+PathStatus, func(w http.ResponseWriter, req *http.Request) {
		if !c.authorized(req) {
			unauthorized(w)
			return
		}
		s, err := Snapshot(req.Context(), c.Queue)
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, s)
	})
	return mux
}

func (c *Coordinator) claim(ctx context.Context, r *ClaimRequest) (any, error) {
	if err := c.Queue.Touch(ctx, r.WorkerID); err != nil {
		return nil, err
	}
	if len(r.Free) == 0 {
		return ClaimResponse{}, nil
	}
	wait := min(time.Duration(r.WaitS*float64(time.Second)), c.claimWait())
	deadline := time.Now().Add(wait)
	for {
		ch := c.Queue.Changed()
		jobs, err := c.Queue.Claim(ctx, r.WorkerID, r.Free)
		if err != nil || len(jobs) > 0 {
			return ClaimResponse{Jobs: jobs}, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return ClaimResponse{}, nil
		}
		// Another process (a resumed search) may enqueue too: poll as well.
		select {
		case <-ch:
		case <-time.After(min(left, 500*time.Millisecond)):
		case <-ctx.Done():
			return ClaimResponse{}, nil
		}
	}
}

// authorized compares the bearer token in constant time.
func (c *Coordinator) authorized(r *http.Request) bool {
	if c.Token == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(c.Token)) == 1
}

type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(msg string) error { return &httpError{http.StatusBadRequest, msg} }

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="kevolve-fleet"`)
	writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong bearer token"})
}

// handle decodes a size-limited JSON body into Req, calls f and writes its
// answer as JSON.
func handle[Req any](c *Coordinator, f func(context.Context, *Req) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !c.authorized(r) {
			unauthorized(w)
			return
		}
		if r.ContentLength > MaxBody {
			writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": fmt.Sprintf("body over %d bytes", MaxBody)})
			return
		}
		var req Req
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody))
		if err := dec.Decode(&req); err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": fmt.Sprintf("body over %d bytes", MaxBody)})
				return
			}
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "bad JSON body: " + err.Error()})
			return
		}
		out, err := f(r.Context(), &req)
		if err != nil {
			code := http.StatusInternalServerError
			var he *httpError
			switch {
			case errors.As(err, &he):
				code = he.code
			case errors.Is(err, ErrUnknownWorker):
				code = http.StatusNotFound
			}
			if code == http.StatusInternalServerError && r.Context().Err() != nil {
				return // the client went away
			}
			if code == http.StatusInternalServerError {
				c.log().Warn("fleet request failed", "path", r.URL.Path, "err", err)
			}
			writeJSON(w, code, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
