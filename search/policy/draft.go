package policy

import (
	"fmt"

	"github.com/kevolve/kevolve-mcp/search"
)

// Draft makes N independent children of the root before handing over to
// Inner. With islands, draft k seeds island k mod Islands.
type Draft struct {
	N     int
	Inner search.Policy
}

func (d Draft) Name() string { return d.Inner.Name() }

func (d Draft) Select(g *search.Graph, rng randSource) (search.Selection, error) {
	root := g.Root()
	if root != nil && root.Evaluated() && !g.Closed[root.ID] {
		drafts := 0
		for _, c := range g.Children(root.ID) {
			if c.Depth == 1 {
				drafts++
			}
		}
		if drafts < d.N {
			island := 0
			if ev, ok := d.Inner.(Evolve); ok {
				island = drafts % ev.islands()
			}
			return search.Selection{Parents: []int64{root.ID}, Island: island, Draft: true,
				Why: fmt.Sprintf("draft %d of %d", drafts+1, d.N)}, nil
		}
	}
	return d.Inner.Select(g, rng)
}
