package problem

// Verdicts of an evaluation (DESIGN.md section 3): the one vocabulary the
// harness returns and the search ranks by. harness and search re-export
// them under their own names.
const (
	VerdictPass               = "pass"
	VerdictIncorrect          = "incorrect"
	VerdictCompileError       = "compile_error"
	VerdictRuntimeError       = "runtime_error"
	VerdictTimeout            = "timeout"
	VerdictCrash              = "crash"
	VerdictIntegrityViolation = "integrity_violation"
	// VerdictReferenceError: the reference (not the candidate) failed to
	// import, construct, make inputs or run; the result's stage says which
	// (reference_import|reference_init|reference_inputs|reference_forward).
	VerdictReferenceError = "reference_error"
	// VerdictShapeSpecialized: correct at the shape the candidate was
	// shown, wrong (or failing) at one it was not, which the judge chose
	// where the problem allows other sizes (issue 32, item 7).
	VerdictShapeSpecialized = "shape_specialized"
)

// Verdicts is every verdict, the one list the others render from: pass,
// then the failures in the order the harness ranks them when several apply
// (the worker's py/checks/__init__.py VERDICTS keeps the same order).
var Verdicts = []string{VerdictPass, VerdictIntegrityViolation, VerdictIncorrect, VerdictShapeSpecialized, VerdictCompileError,
	VerdictRuntimeError, VerdictTimeout, VerdictCrash, VerdictReferenceError}

// FailureVerdicts are Verdicts less pass, in rank order (a copy: callers
// may append to it).
func FailureVerdicts() []string { return append([]string(nil), Verdicts[1:]...) }
