package optimize

import (
	"context"
	"database/sql"
	"errors"

	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/deploy"
)

// Service is the model flow's steps for an agent that drives them itself
// (the model_profile, deploy and verify_model tools): the same functions
// optimize runs, over the server's worker and database. The optimize
// command resolves its options through one too (Options).
type Service struct {
	Jobs    Jobs
	DB      *sql.DB
	Store   search.Store
	DataDir string
	// Ceilings, when set, gives the device's ceilings for the SOL ranking.
	Ceilings func(ctx context.Context) *sol.Ceilings
	// ResolveTarget turns a target word (auto included) into this host's
	// target, as a search's is resolved, so a GPU host profiles for its
	// GPU and names its start kernels; nil leaves the word as given.
	ResolveTarget func(ctx context.Context, s string) (string, error)
}

var errNoService = errors.New("the model flow needs the Python worker and the database: start the server with both")

// Profile ranks a model's operators and extracts its hot regions.
func (s *Service) Profile(ctx context.Context, r Request) (*Summary, error) {
	if s == nil || s.Jobs == nil || s.DB == nil {
		return nil, errNoService
	}
	o, err := s.Options(ctx, r)
	if err != nil {
		return nil, err
	}
	return ProfileModel(ctx, s.Jobs, s.DB, o)
}

// Deploy puts a run's best kernel into the registry.
func (s *Service) Deploy(ctx context.Context, runID string) (*deploy.Entry, string, error) {
	if s == nil || s.Store == nil || s.DB == nil {
		return nil, "", errNoService
	}
	return DeployRun(ctx, s.DB, s.Store, runID)
}

// Verify checks a model patched with the registry against the original.
func (s *Service) Verify(ctx context.Context, r Request) (*Summary, error) {
	if s == nil || s.Jobs == nil || s.DB == nil {
		return nil, errNoService
	}
	o, err := s.Options(ctx, r)
	if err != nil {
		return nil, err
	}
	return VerifyModel(ctx, s.Jobs, s.DB, o)
}
