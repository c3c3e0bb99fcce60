package report

import (
	"fmt"
	"html/template"
	"io"
)

// ModelPage is one optimized model: its ranked operators, the registry
// entries serving it and the end-to-end result beside Amdahl's prediction.
type ModelPage struct {
	Model, Device, Arch, TimeBasis string
	ForwardUs                      float64
	Ops                            []ModelOp
	Entries                        []ModelEntry
	Rejected, Notes                []string
	// End to end (Verified false: not measured).
	Verified, Correct                    bool
	Detail                               string
	Measured, MeasuredCompile, Predicted float64
	Gap                                  string
	WallS                                float64
}

// ModelOp is one ranked operator.
type ModelOp struct {
	Name, ProblemID, Note           string
	Share, Headroom, Saving, Amdahl float64
	Searched                        bool
}

// ModelEntry is one registry entry the model uses.
type ModelEntry struct {
	ID, Op, Shapes, Dtype, Arch string
	Speedup, Spread, PctOfSOL   float64
}

var modelTmpl = template.Must(template.New("model").Funcs(template.FuncMap{
	"pct": func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) },
	"x": func(v float64) string {
		if v == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2fx", v)
	},
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'">
<title>kevolve optimize: {{.Model}}</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse;margin:1em 0}
td,th{padding:.3em .7em;border-bottom:1px solid #ddd;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
.bad{color:#b00}.good{color:#070}</style></head><body>
<h1>{{.Model}}</h1>
<p>{{.Device}} ({{.Arch}}), forward {{printf "%.0f" .ForwardUs}} µs; shares are of the forward time ({{.TimeBasis}}).</p>
<h2>End to end</h2>
{{if .Verified}}<table><tr><th>correct</th><th>measured vs eager</th><th>vs torch.compile</th><th>Amdahl predicted</th><th>gap</th></tr>
<tr><td class="{{if .Correct}}good{{else}}bad{{end}}">{{.Correct}} {{.Detail}}</td><td class="n">{{x .Measured}}</td><td class="n">{{x .MeasuredCompile}}</td><td class="n">{{x .Predicted}}</td><td>{{.Gap}}</td></tr></table>
{{else}}<p>not verified</p>{{end}}
<h2>Operators</h2>
<table><tr><th>operator</th><th>share</th><th>SOL headroom</th><th>model saving at SOL</th><th>Amdahl bound</th><th>problem</th><th>note</th></tr>
{{range .Ops}}<tr><td>{{.Name}}</td><td class="n">{{pct .Share}}</td><td class="n">{{x .Headroom}}</td><td class="n">{{pct .Saving}}</td><td class="n">{{x .Amdahl}}</td><td>{{.ProblemID}}</td><td>{{.Note}}</td></tr>
{{end}}</table>
<h2>Registry entries</h2>
{{if .Entries}}<table><tr><th>id</th><th>op</th><th>shapes</th><th>dtype</th><th>arch</th><th>speedup</th><th>spread</th><th>% of SOL</th></tr>
{{range .Entries}}<tr><td>{{.ID}}</td><td>{{.Op}}</td><td>{{.Shapes}}</td><td>{{.Dtype}}</td><td>{{.Arch}}</td><td class="n">{{x .Speedup}}</td><td class="n">{{pct .Spread}}</td><td class="n">{{printf "%.0f" .PctOfSOL}}</td></tr>
{{end}}</table>{{else}}<p>none deployed</p>{{end}}
{{range .Rejected}}<p>not deployed: {{.}}</p>{{end}}
{{range .Notes}}<p>{{.}}</p>{{end}}
<p>job wall time {{printf "%.0f" .WallS}} s</p>
</body></html>
`))

// WriteModelHTML renders a model page (self-contained, no script).
func WriteModelHTML(w io.Writer, p ModelPage) error {
	if err := modelTmpl.Execute(w, p); err != nil {
		return fmt.Errorf("model report: %w", err)
	}
	return nil
}
