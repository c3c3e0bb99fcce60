package runs

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/kevolve/kevolve-mcp/search"
)

// broadcast wakes every waiter when anything changes: waiters take the
// current channel, and a change closes it and makes a new one. It is how a
// long poll returns early without polling SQL in a tight loop.
type broadcast struct {
	mu sync.Mutex
	ch chan struct{}
}

func newBroadcast() *broadcast { return &broadcast{ch: make(chan struct{})} }

// wait returns a channel closed at the next change.
func (b *broadcast) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ch
}

func (b *broadcast) notify() {
	b.mu.Lock()
	close(b.ch)
	b.ch = make(chan struct{})
	b.mu.Unlock()
}

// watchedStore is the store as one drive of one run sees it: every write
// goes to the real store and then wakes the manager's waiters, and a node
// written for an agent's submission is matched to its ticket so that
// evolve_submit can follow it. The engine needs no hook for any of it.
type watchedStore struct {
	search.Store
	changed *broadcast
	agent   *agentOperator // nil for server-side operators
	// wrote, when set, is called after every successful run update: the
	// drive's first one says the engine holds the run.
	wrote func()
}

func (s *watchedStore) InsertNode(ctx context.Context, n *search.Node) error {
	err := s.Store.InsertNode(ctx, n)
	if err == nil && s.agent != nil && n.Operator == OperatorName {
		var in struct {
			Ticket int64 `json:"ticket"`
		}
		if json.Unmarshal(n.OperatorInput, &in) == nil && in.Ticket > 0 {
			s.agent.recordNode(in.Ticket, n.ID)
		}
	}
	s.changed.notify()
	return err
}

func (s *watchedStore) FinishNode(ctx context.Context, n *search.Node, r *search.Run) error {
	err := s.Store.FinishNode(ctx, n, r)
	s.changed.notify()
	return err
}

func (s *watchedStore) SetNodeState(ctx context.Context, id int64, st search.NodeState) error {
	err := s.Store.SetNodeState(ctx, id, st)
	s.changed.notify()
	return err
}

func (s *watchedStore) UpdateRun(ctx context.Context, r *search.Run) error {
	err := s.Store.UpdateRun(ctx, r)
	if err == nil && s.wrote != nil {
		s.wrote()
	}
	s.changed.notify()
	return err
}

func (s *watchedStore) AppendEvent(ctx context.Context, e *search.Event) error {
	err := s.Store.AppendEvent(ctx, e)
	s.changed.notify()
	return err
}
