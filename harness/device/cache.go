package device

import (
	"context"
	"sync"
)

// Cache holds one discovery so the tools and the harness share it: the
// torch probe costs seconds and hardware does not change under a server.
type Cache struct {
	opt    Options
	mu     sync.Mutex
	report *Report
}

// NewCache returns a cache that discovers with opt on first use.
func NewCache(opt Options) *Cache { return &Cache{opt: opt} }

// Get returns the cached report, discovering it first if needed or asked.
func (c *Cache) Get(ctx context.Context, refresh bool) Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.report == nil || refresh {
		r := Discover(ctx, c.opt)
		c.report = &r
	}
	return *c.report
}
