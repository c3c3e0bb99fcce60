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
)
