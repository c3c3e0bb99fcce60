package cmdop

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

// usage is what an agent's output says it cost, and whether it failed.
type usage struct {
	In, Out int
	CostUSD float64
	Turns   int
	Notes   string
	Err     string
}

// parseLastLineJSON reads the generic contract: the last stdout line that
// is a JSON object (toolchain.LastJSONLine, the harness's one reader) may
// be {"tokens": N, "input_tokens": N, "output_tokens": N, "cost_usd": X,
// "notes": "..."}. Anything else is ignored.
func parseLastLineJSON(out []byte) usage {
	last := toolchain.LastJSONLine(string(out))
	var v struct {
		Tokens  int     `json:"tokens"`
		In      int     `json:"input_tokens"`
		Out     int     `json:"output_tokens"`
		CostUSD float64 `json:"cost_usd"`
		Notes   string  `json:"notes"`
	}
	if last == "" || json.Unmarshal([]byte(last), &v) != nil {
		return usage{}
	}
	u := usage{In: v.In, Out: v.Out, CostUSD: v.CostUSD, Notes: v.Notes}
	if u.In+u.Out == 0 {
		u.Out = v.Tokens
	}
	return u
}

// parseClaude reads `claude -p --output-format json`: one JSON object with
// is_error, result, num_turns, total_cost_usd and usage.
func parseClaude(out []byte) usage {
	var v struct {
		Type    string  `json:"type"`
		Subtype string  `json:"subtype"`
		IsError bool    `json:"is_error"`
		Result  string  `json:"result"`
		Turns   int     `json:"num_turns"`
		Cost    float64 `json:"total_cost_usd"`
		Usage   struct {
			In          int `json:"input_tokens"`
			Out         int `json:"output_tokens"`
			CacheCreate int `json:"cache_creation_input_tokens"`
			CacheRead   int `json:"cache_read_input_tokens"`
		} `json:"usage"`
	}
	// The CLI prints its result as one line; anything it printed before
	// (a warning) is skipped.
	if json.Unmarshal([]byte(toolchain.LastJSONLine(string(out))), &v) != nil {
		return usage{}
	}
	u := usage{In: v.Usage.In + v.Usage.CacheCreate + v.Usage.CacheRead, Out: v.Usage.Out, CostUSD: v.Cost, Turns: v.Turns}
	if v.IsError || (v.Subtype != "" && v.Subtype != "success") {
		u.Err = strings.TrimSpace(v.Result)
		if u.Err == "" {
			u.Err = v.Subtype
		}
	} else {
		u.Notes = lastLine(v.Result)
	}
	return u
}

// parseCodex reads `codex exec --json`: JSON lines; turn.completed events
// carry usage, item.completed agent messages the final answer, error and
// turn.failed events a failure.
func parseCodex(out []byte) usage {
	var u usage
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Type  string `json:"type"`
			Usage struct {
				In     int `json:"input_tokens"`
				Cached int `json:"cached_input_tokens"`
				Out    int `json:"output_tokens"`
			} `json:"usage"`
			Item struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"item"`
			Message string `json:"message"`
			Error   struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch ev.Type {
		case "turn.completed":
			u.In += ev.Usage.In
			u.Out += ev.Usage.Out
			u.Turns++
		case "item.completed":
			if ev.Item.Type == "agent_message" {
				u.Notes = lastLine(ev.Item.Text)
			}
		case "error":
			u.Err = ev.Message
		case "turn.failed":
			u.Err = ev.Error.Message
		}
	}
	return u
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
