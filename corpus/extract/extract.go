// Package extract holds the problems taken out of a user's model: each hot
// region of the graphs TorchDynamo captured (attention, a GEMM with its
// epilogue, a normalization with its residual add, a pointwise chain, or a
// signature region the deploy runtime knows) written by the worker's
// model_profile job as a KernelBench-format file with the shapes, dtypes
// and weights it saw, kept in the user's data directory and listed in the
// one SQLite file so a later run can search it again. A region whose
// signature is a bundled corpus operator's gets that operator's start
// kernel (its tunables give the offline tuner something to tune); the
// others get Inductor's generated code (model_starts).
package extract

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/corpus"
)

// Region is one extracted region as the model_profile job reports it.
type Region struct {
	Sig     string    `json:"sig"`
	Where   string    `json:"where"` // module or node it was found at
	Nodes   []string  `json:"nodes"`
	Bundled string    `json:"bundled,omitempty"` // the corpus operator of the same signature
	Shapes  [][]int64 `json:"shapes"`            // of the kernel's tensor arguments
	Dtype   string    `json:"dtype"`
	Init    []any     `json:"init"`
	TimeUs  float64   `json:"time_us"`
	Share   float64   `json:"share"`
	FLOPs   float64   `json:"flops"`
	Bytes   float64   `json:"bytes"`
	File    string    `json:"problem_file"`
	// Op is what a kernel for a region cut from a captured graph deploys
	// under: its name and a hash of its structure (whole_model/partition.py
	// op_key), so the runtime serves only a region computing the same
	// thing. "" for a signature region, which deploys under Sig.
	Op string `json:"op,omitempty"`
	// Kind is what found the region: "signature" (a region the deploy
	// runtime replaces: whole_model/patterns.py) or the partitioner's kind
	// of a region cut from the captured graph (attention, gemm, reduction,
	// pointwise); "" in a profile made before the capture.
	Kind string `json:"kind,omitempty"`
	// Calls is how many times a forward runs it (layers whose graphs and
	// shapes are the same are one problem); TimeUs is all of them, FLOPs
	// and Bytes one call's.
	Calls int `json:"calls,omitempty"`
	// StartFile is the region's Inductor start (whole_model/starts.py),
	// StartError why there is none; both set by optimize, not stored.
	StartFile  string `json:"start_file,omitempty"`
	StartError string `json:"start_error,omitempty"`
	// ID is the problem's content hash (set by Store).
	ID string `json:"problem_id,omitempty"`
}

// RegistryOp is the op a kernel for the region is registered under.
func (r Region) RegistryOp() string {
	if r.Op != "" {
		return r.Op
	}
	return r.Sig
}

// PerCallUs is the time of one call of the region.
func (r Region) PerCallUs() float64 { return r.TimeUs / float64(max(r.Calls, 1)) }

// Node is a graph node outside every region, with its time.
type Node struct {
	Name   string  `json:"name"`
	Target string  `json:"target"`
	TimeUs float64 `json:"time_us"`
	Share  float64 `json:"share"`
}

// Break is one cause of a TorchDynamo graph break.
type Break struct {
	Cause  string `json:"cause"`
	Detail string `json:"detail,omitempty"`
	Count  int    `json:"count"`
}

// Capture is where the profiled forward's time went, from the TorchDynamo
// capture: the regions, the glue between them inside the captured graphs,
// and what ran outside every graph; the three add up to the profile's
// TotalUs.
type Capture struct {
	Graphs            int       `json:"graphs"`
	GraphCalls        []float64 `json:"graph_calls"`
	Breaks            []Break   `json:"breaks,omitempty"`
	RegionsUs         float64   `json:"regions_us"`
	GlueUs            float64   `json:"glue_us"`
	NotCapturedUs     float64   `json:"not_captured_us"`
	ProfiledForwardUs float64   `json:"profiled_forward_us"`
}

// Profile is the model_profile job's result.
type Profile struct {
	Device     string   `json:"device"`
	Arch       string   `json:"arch"`
	ForwardUs  float64  `json:"forward_us"`
	Attributed float64  `json:"attributed_us"`
	TotalUs    float64  `json:"total_us"`
	TimeBasis  string   `json:"time_basis"`
	Note       string   `json:"note,omitempty"`
	Regions    []Region `json:"regions"`
	Nodes      []Node   `json:"nodes"`
	// Capture is nil where TorchDynamo captured nothing (the profile then
	// comes from torch.fx or the model's modules, as Note says).
	Capture *Capture `json:"capture,omitempty"`
}

// Dir is where a model's problems go: <data>/extracted/<hash of the
// model's source>, so a changed model gets new problems and the same one
// finds its old ones.
func Dir(dataDir, modelFile string) (string, error) {
	b, err := os.ReadFile(modelFile)
	if err != nil {
		return "", fmt.Errorf("extract: model: %w", err)
	}
	h := sha256.Sum256(b)
	return filepath.Join(dataDir, "extracted", hex.EncodeToString(h[:6])), nil
}

// Start is the bundled start kernel for a region in a language ("" when
// the region matches no bundled operator or it has no such start).
func Start(r Region, language string) string {
	if r.Bundled == "" {
		return ""
	}
	p, err := corpus.Get(r.Bundled)
	if err != nil {
		return ""
	}
	src, err := p.StartSource(language)
	if err != nil {
		return ""
	}
	return src
}

// Store lists the profile's problems in the extracted_problems table
// (migrating it) and sets each region's ID, the hash of its file.
func Store(ctx context.Context, db *sql.DB, model string, p *Profile) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS extracted_problems (
		id TEXT PRIMARY KEY,       -- sha256 of the problem file (12 hex)
		model TEXT NOT NULL,       -- the model file it came from
		sig TEXT NOT NULL,
		location TEXT NOT NULL,
		bundled TEXT NOT NULL DEFAULT '',
		dtype TEXT NOT NULL,
		arch TEXT NOT NULL,        -- the device arch it was profiled on
		path TEXT NOT NULL,
		region TEXT NOT NULL,      -- JSON Region: shapes, constants, share
		created_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("extract: migrate: %w", err)
	}
	for i := range p.Regions {
		r := &p.Regions[i]
		b, err := os.ReadFile(r.File)
		if err != nil {
			return fmt.Errorf("extract: %w", err)
		}
		h := sha256.Sum256(b)
		r.ID = hex.EncodeToString(h[:6])
		js, _ := json.Marshal(r)
		if _, err := db.ExecContext(ctx, `INSERT OR REPLACE INTO extracted_problems (id, model, sig, location, bundled, dtype, arch, path, region, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.ID, model, r.Sig, r.Where, r.Bundled, r.Dtype, p.Arch, r.File, string(js), time.Now().UTC().Format(time.RFC3339)); err != nil {
			return fmt.Errorf("extract: store %s: %w", r.File, err)
		}
	}
	return nil
}

// ErrNotExtracted is a problem file no optimize job extracted.
var ErrNotExtracted = errors.New("not an extracted problem")

// ByPath finds the region a problem file was extracted from, and the arch
// it was profiled on.
func ByPath(ctx context.Context, db *sql.DB, path string) (Region, string, error) {
	var js, arch string
	err := db.QueryRowContext(ctx, `SELECT region, arch FROM extracted_problems WHERE path = ? ORDER BY created_at DESC LIMIT 1`, path).Scan(&js, &arch)
	if errors.Is(err, sql.ErrNoRows) || (err != nil && strings.Contains(err.Error(), "no such table")) {
		return Region{}, "", fmt.Errorf("%s: %w (run optimize or model_profile on its model first)", path, ErrNotExtracted)
	}
	if err != nil {
		return Region{}, "", fmt.Errorf("extract: %w", err)
	}
	var r Region
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		return Region{}, "", fmt.Errorf("extract: %s: %w", path, err)
	}
	return r, arch, nil
}

// Model is the model file a problem file was extracted from.
func Model(ctx context.Context, db *sql.DB, path string) (string, error) {
	var m string
	if err := db.QueryRowContext(ctx, `SELECT model FROM extracted_problems WHERE path = ? ORDER BY created_at DESC LIMIT 1`, path).Scan(&m); err != nil {
		return "", fmt.Errorf("extract: model of %s: %w", path, err)
	}
	return m, nil
}
