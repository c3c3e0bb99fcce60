package report

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
)

//go:embed assets/report.html.tmpl assets/report.css assets/report.js
var assets embed.FS

var (
	pageTmpl  = template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{"add": add, "half": half}).ParseFS(assets, "assets/report.html.tmpl"))
	pageCSS   = mustAsset("assets/report.css")
	pageJS    = mustAsset("assets/report.js")
	scriptCSP = func() string {
		sum := sha256.Sum256([]byte(pageJS))
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}()
)

// contentPolicy lets the page run only its own script (by hash) and fetch
// nothing at all: the report works offline by construction, and a node's code
// that somehow smuggled markup in still could not run.
var contentPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src " + scriptCSP + "; base-uri 'none'; form-action 'none'"

func mustAsset(name string) string {
	b, err := assets.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func add(vs ...float64) float64 {
	s := 0.0
	for _, v := range vs {
		s += v
	}
	return s
}

func half(v float64) float64 { return v / 2 }

// WriteHTML renders the run as one self-contained HTML page.
func WriteHTML(w io.Writer, run Run, nodes []Node, ceil Ceilings) error {
	return writeHTML(w, run, nodes, ceil, time.Now())
}

func writeHTML(w io.Writer, run Run, nodes []Node, ceil Ceilings, now time.Time) error {
	p, g, best := buildPage(run, nodes, ceil, now)
	data, err := buildData(run, g, best)
	if err != nil {
		return fmt.Errorf("report: encoding node data: %w", err)
	}
	var buf bytes.Buffer
	err = pageTmpl.Execute(&buf, map[string]any{
		"P":      p,
		"Run":    run,
		"CSP":    contentPolicy,
		"CSS":    template.CSS(pageCSS),
		"Script": template.JS(pageJS),
		// json.Marshal escapes <, > and &, so this cannot close the element.
		"Data": template.JS(data),
	})
	if err != nil {
		return fmt.Errorf("report: rendering: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// WriteFile writes the report to path atomically (a temporary file renamed
// over it), so a reader never sees half a page.
func WriteFile(path string, run Run, nodes []Node, ceil Ceilings) error {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, run, nodes, ceil); err != nil {
		return err
	}
	if err := search.WriteFileAtomic(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
