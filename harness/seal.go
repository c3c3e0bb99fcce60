package harness

// The evaluation process seals its result before the verify stage, the
// first stage in which the candidate's code runs inside the judge's work:
// it serializes the result, sends the judge its hash, and returns the
// sealed bytes with the little it learns afterwards (whether its process
// is kept, the verify stage's seconds). The judge writes the hash into its
// own report, out of the candidate's reach, so a result rewritten after
// that point (in memory, through the result file's descriptor, or by a
// thread left running) no longer matches and is refused.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// sealedAnswer is what evaluate/main.py's main returns.
type sealedAnswer struct {
	Sealed *string `json:"sealed"`
	After  struct {
		Process *ProcessUse `json:"process"`
		VerifyS *float64    `json:"verify_s"`
	} `json:"after"`
}

// unsealed is an evaluation's result as the harness takes it.
type unsealed struct {
	Raw     json.RawMessage
	Process *ProcessUse
	VerifyS *float64
	// Forged says why the result is not the one the judge saw sealed ("").
	Forged string
}

// unseal opens evaluate/main.py's answer and checks the sealed result against
// the hash in the judge's report. An answer that is not sealed (a harness
// error, a job without the judge) is returned as it is.
func unseal(answer, judge json.RawMessage) unsealed {
	var j struct {
		SHA string `json:"result_sha256"`
	}
	sealedSeen := len(judge) > 0 && json.Unmarshal(judge, &j) == nil && j.SHA != ""
	var a sealedAnswer
	if json.Unmarshal(answer, &a) != nil || a.Sealed == nil {
		if sealedSeen {
			// The judge was given a sealed result's hash: an answer in any
			// other form was written by someone else.
			return unsealed{Raw: answer, Forged: "the result file does not hold the result the evaluation process sealed before the verify stage: it was replaced while or after the candidate's code ran in the judge's stages"}
		}
		return unsealed{Raw: answer}
	}
	u := unsealed{Raw: json.RawMessage(*a.Sealed), Process: a.After.Process, VerifyS: a.After.VerifyS}
	if sealedSeen {
		sum := sha256.Sum256([]byte(*a.Sealed))
		if got := hex.EncodeToString(sum[:]); got != j.SHA {
			u.Forged = fmt.Sprintf("the result file is not the one the evaluation process sealed before the verify stage (sha256 %.12s, the judge was given %.12s): it was rewritten while or after the candidate's code ran in the judge's stages", got, j.SHA)
		}
	}
	return u
}
