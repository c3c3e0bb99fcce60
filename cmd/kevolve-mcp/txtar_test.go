package main

import (
	"bytes"
	"strings"
	"testing"
)

// archive is a txtar file (golang.org/x/tools/txtar's format, as
// modelcontextprotocol/go-sdk's conformance tests use it): a free comment,
// then files, each opened by a line "-- name --". Parsed here in a few lines
// rather than adding a module for it.
type archive struct {
	comment string
	files   []archiveFile
}

type archiveFile struct {
	name string
	data string
}

func parseArchive(b []byte) archive {
	var a archive
	cur := -1
	var buf strings.Builder
	flush := func() {
		if cur < 0 {
			a.comment = buf.String()
		} else {
			a.files[cur].data = buf.String()
		}
		buf.Reset()
	}
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if name, ok := fileMarker(line); ok {
			flush()
			a.files = append(a.files, archiveFile{name: name})
			cur = len(a.files) - 1
			continue
		}
		buf.WriteString(line)
	}
	flush()
	return a
}

func fileMarker(line string) (string, bool) {
	l := strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(l, "-- ") && strings.HasSuffix(l, " --") && len(l) > 6 {
		return strings.TrimSpace(l[3 : len(l)-3]), true
	}
	return "", false
}

func (a archive) file(name string) (string, bool) {
	for _, f := range a.files {
		if f.name == name {
			return f.data, true
		}
	}
	return "", false
}

// set replaces a file's contents, or appends the file.
func (a *archive) set(name, data string) {
	for i := range a.files {
		if a.files[i].name == name {
			a.files[i].data = data
			return
		}
	}
	a.files = append(a.files, archiveFile{name: name, data: data})
}

func (a archive) format() []byte {
	var b bytes.Buffer
	b.WriteString(a.comment)
	for _, f := range a.files {
		b.WriteString("-- " + f.name + " --\n")
		b.WriteString(f.data)
		if f.data != "" && !strings.HasSuffix(f.data, "\n") {
			b.WriteString("\n")
		}
	}
	return b.Bytes()
}

// An archive reads back as it was written, comment and files in order.
func TestArchiveRoundTrip(t *testing.T) {
	in := "a comment\n-- client --\ninitialize\n-- server --\n> initialize\n< result {}\n"
	a := parseArchive([]byte(in))
	if a.comment != "a comment\n" || len(a.files) != 2 || a.files[1].data != "> initialize\n< result {}\n" {
		t.Fatalf("parsed %+v", a)
	}
	if got := string(a.format()); got != in {
		t.Errorf("formatted %q, want %q", got, in)
	}
	a.set("server", "new\n")
	if d, _ := a.file("server"); d != "new\n" || len(a.files) != 2 {
		t.Errorf("set: %+v", a)
	}
}
