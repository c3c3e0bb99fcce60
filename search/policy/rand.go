package policy

import "math/rand"

// randSource is the *rand.Rand the engine passes in (seeded per selection).
type randSource = *rand.Rand
