package knowledge_test

import (
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/spec"
	"github.com/kevolve/kevolve-mcp/knowledge"
)

// Every arch of the hardware spec table is a word of the knowledge base's
// vocabulary, with the same vendor: a new row (an MI300X successor, a new
// NVIDIA part) that names a new arch fails here until documents can be
// filed under it.
func TestArchesFollowSpecTable(t *testing.T) {
	for arch, vendor := range spec.Arches() {
		if !knowledge.ValidArch(arch) {
			t.Errorf("spec arch %q is not in knowledge.Arches %v", arch, knowledge.Arches)
		}
		if got := knowledge.ArchVendor(arch); got != vendor {
			t.Errorf("arch %q: knowledge says vendor %q, the spec table %q", arch, got, vendor)
		}
	}
}
